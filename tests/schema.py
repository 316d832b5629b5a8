"""The published JSON schema of the export (docs/export.schema.json): every export a
test makes can be checked against it, so scripts and Ansible can rely on the shape."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, ValidationError

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "docs" / "export.schema.json"


@cache
def validator(path: Path = SCHEMA_PATH) -> Draft202012Validator:
    schema = json.loads(path.read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def check_export(document: dict[str, Any]) -> None:
    """Fail with every place the document departs from the schema."""
    errors = sorted(validator().iter_errors(document), key=lambda e: list(e.absolute_path))
    if errors:
        # A section is one of two shapes: say where the reading departs from its own.
        leaves = [leaf for error in errors for leaf in _leaves(error)]
        lines = [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:200]}"
                 for e in leaves[:10]]
        raise AssertionError("export does not match docs/export.schema.json:\n"
                             + "\n".join(lines))


def _leaves(error: ValidationError) -> list[ValidationError]:
    if not error.context:
        return [error]
    return [leaf for sub in error.context if "unavailable_section" not in str(
        list(sub.schema_path) + list(sub.relative_schema_path)) for leaf in _leaves(sub)] \
        or [error]


STATE_SCHEMA_PATH = SCHEMA_PATH.parent / "state.schema.json"


def state_schema() -> dict[str, Any]:
    """The desired-state file's JSON Schema, made from the sections' declared types
    (docs/state.schema.json is this; `python -m tests.schema` writes it again)."""
    import msgspec

    from zsn.desired.document import VERSION, document_type

    made = msgspec.json.schema(document_type())
    definitions = made["$defs"]
    for definition in definitions.values():
        if "properties" in definition:
            definition["additionalProperties"] = False
            definition.pop("title", None)
    root = definitions.pop("DesiredState")
    root["properties"]["version"] = {"const": VERSION}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"urn:zsn:state:schema:{VERSION}",
            "title": f"zsn desired state, schema {VERSION}",
            "description": "The file `zsn apply` reads and `zsn state export` writes "
                           "(docs/state.md). A key not named here is refused; what the "
                           "file does not name is left as it is.",
            **root, "$defs": definitions}


def check_state(document: dict[str, Any]) -> None:
    """Fail with every place the state document departs from docs/state.schema.json."""
    errors = sorted(validator(STATE_SCHEMA_PATH).iter_errors(document),
                    key=lambda e: list(e.absolute_path))
    if errors:
        raise AssertionError("state does not match docs/state.schema.json:\n" + "\n".join(
            f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:200]}"
            for e in errors[:10]))


if __name__ == "__main__":
    STATE_SCHEMA_PATH.write_text(json.dumps(state_schema(), indent=2) + "\n")
