"""`zpool list` and `zfs list`: scripted text (``-Hp -o ...``) and 2.3+ JSON (``-j``).

zsn asks for the columns it needs; the parsers take the column list, so the captures
other tools made with other columns (and the defaults) parse too.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from zsn import decode
from zsn.errors import ParseError
from zsn.format import excerpt, human_bytes
from zsn.zfs import units
from zsn.zfs.model import Dataset
from zsn.zfs.names import DATASET_COLUMNS, POOL_COLUMNS
from zsn.zfs.units import is_number

DEFAULT_POOL_COLUMNS = ("name", "size", "allocated", "free", "checkpoint", "expandsize",
                        "fragmentation", "capacity", "dedupratio", "health", "altroot")
"""`zpool list -H` without ``-o`` (OpenZFS 0.8+)."""
DEFAULT_DATASET_COLUMNS = ("name", "used", "available", "referenced", "mountpoint")

_ALIASES = {"alloc": "allocated", "frag": "fragmentation", "cap": "capacity",
            "dedup": "dedupratio", "avail": "available", "refer": "referenced",
            "ratio": "compressratio", "usedsnap": "usedbysnapshots",
            "usedds": "usedbydataset"}


def _canonical(column: str) -> str:
    return _ALIASES.get(column, column)


def parse_text_rows(text: str, columns: Sequence[str], what: str) -> list[dict[str, str]]:
    """Tab-separated rows (``-H``) as dicts; lines with another field count are skipped
    (`zpool list -Hv` prints its vdev rows and class headings in other layouts)."""
    names = [_canonical(c) for c in columns]
    rows: list[dict[str, str]] = []
    for line in text.splitlines():
        if not line or line.startswith("\t") or line == "no pools available":
            continue
        fields = line.split("\t")
        if len(fields) != len(names):
            if "\t" in line:
                raise ParseError(f"{what}: {len(fields)} fields where {len(names)} were "
                                 "asked for: " + excerpt(line))
            continue
        rows.append(dict(zip(names, fields, strict=True)))
    return rows


def pool_properties(row: Mapping[str, str]) -> dict[str, Any]:
    """A `zpool list` row as `zsn.zfs.model.Pool` keyword arguments."""
    found: dict[str, Any] = {"name": row["name"]}
    if "health" in row:
        found["health"] = row["health"]
    for key, field, parse in (("size", "size", units.size),
                              ("allocated", "allocated", units.size),
                              ("free", "free", units.size),
                              ("fragmentation", "fragmentation", units.percent),
                              ("capacity", "capacity", units.percent),
                              ("dedupratio", "dedup_ratio", units.ratio),
                              ("ashift", "ashift", units.integer),
                              ("freeing", "freeing", units.size),
                              ("leaked", "leaked", units.size),
                              ("readonly", "readonly", units.on_off)):
        if key in row:
            found[field] = parse(row[key])
    return found


def parse_pools_text(text: str, columns: Sequence[str] = POOL_COLUMNS) -> list[dict[str, Any]]:
    return [pool_properties(row) for row in parse_text_rows(text, columns, "zpool list")]


def parse_datasets_text(text: str,
                        columns: Sequence[str] = DATASET_COLUMNS) -> list[Dataset]:
    return [_dataset(row) for row in parse_text_rows(text, columns, "zfs list")]


def _dataset(row: Mapping[str, str]) -> Dataset:
    def text(key: str) -> str | None:
        value = row.get(key)
        return None if value is None or value in units.NOT_APPLICABLE else value

    def number(key: str) -> int | None:
        return units.size(row[key]) if key in row else None

    use = text("zsn:use")
    return Dataset(
        name=row["name"], type=row.get("type", "filesystem"),
        used=number("used"), available=number("available"),
        referenced=number("referenced"),
        compress_ratio=units.ratio(row["compressratio"]) if "compressratio" in row else None,
        recordsize=number("recordsize"), volblocksize=number("volblocksize"),
        compression=text("compression"), atime=text("atime"), relatime=text("relatime"),
        xattr=text("xattr"), mountpoint=row.get("mountpoint") if text("mountpoint") else None,
        created=_created(row.get("creation")),
        use=use.lower() if use else None,
    )


def _created(value: str | None) -> int | None:
    """``-p`` prints a Unix time; JSON without ``--json-int`` may print ctime text."""
    if value is None or value in units.NOT_APPLICABLE:
        return None
    if is_number(value.strip()):
        return int(value)
    when = units.ctime(value)
    return int(when) if when is not None else None


# -- JSON (2.3+) -------------------------------------------------------------------
def _load(text: str, what: str, key: str) -> dict[str, Any]:
    document = decode.from_json(text, dict[str, Any], f"{what} -j")
    found = document.get(key)
    if not isinstance(found, dict):
        raise ParseError(f"{what} -j: no {key!r} object")
    return found


def _json_value(value: object) -> str:
    if isinstance(value, dict):
        value = value.get("value")
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def _json_rows(entries: dict[str, Any]) -> list[dict[str, str]]:
    rows = []
    for name, entry in entries.items():
        if not isinstance(entry, dict):
            continue
        row = {_canonical(k): _json_value(v) for k, v in (entry.get("properties") or {}).items()}
        row["name"] = str(entry.get("name", name))
        if "type" in entry:
            row.setdefault("type", str(entry["type"]).lower())
        if "state" in entry:
            row.setdefault("health", str(entry["state"]))
        rows.append(row)
    return rows


def parse_pools_json(text: str) -> list[dict[str, Any]]:
    return [pool_properties(row) for row in _json_rows(_load(text, "zpool list", "pools"))]


def parse_datasets_json(text: str) -> list[Dataset]:
    return [_dataset(row) for row in _json_rows(_load(text, "zfs list", "datasets"))
            if row.get("type") in ("filesystem", "volume")]


GET_COLUMNS = ("name", "property", "value", "source")
"""`zfs get -H` without ``-o``."""
SIZE_PROPERTIES = frozenset((
    "used", "available", "referenced", "quota", "reservation", "volsize", "volblocksize",
    "recordsize", "refquota", "refreservation", "usedbysnapshots", "usedbydataset",
    "usedbychildren", "usedbyrefreservation", "written", "logicalused",
    "logicalreferenced", "special_small_blocks", "snapshots_changed_size"))
TIME_PROPERTIES = frozenset(("creation",))
NONE_WHEN_ZERO = frozenset(("quota", "refquota", "reservation", "refreservation"))
NO_LIMIT = str(2 ** 64 - 1)
"""``-p``'s form of "none" for the count limits (filesystem_limit, snapshot_count ...)."""
"""`zfs get` prints these as "none" when 0 (without ``-p``)."""


def parse_properties(text: str) -> list[tuple[str, str, str]]:
    """`zfs get -Hp all DATASET`: (property, value, source) in zfs's order."""
    return [(row["property"], row["value"], row["source"])
            for row in parse_text_rows(text, GET_COLUMNS, "zfs get")]


def shown_property(prop: str, value: str) -> str:
    """A property's value for people: sizes in KiB/MiB..., times as dates; as is else."""
    if not is_number(value):
        return value
    if (prop in NONE_WHEN_ZERO and int(value) == 0) or value == NO_LIMIT:
        return "none"
    if prop in SIZE_PROPERTIES:
        return human_bytes(int(value))
    if prop in TIME_PROPERTIES:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(int(value)))
    return value
