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
def validator() -> Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text())
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
