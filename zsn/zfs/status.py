"""`zpool status`: the text of every OpenZFS (``-p -P``) and the JSON of 2.3+ (``-j``).

Both give the same `Pool` objects: health, the vdev tree (pool row, data vdevs, then
the dedup, special, logs, cache and spares groups, each member with its parent and
depth), error counters, the last or current scan, and the ``status:``/``action:`` text.

The text is the one format here zsn cannot ask to be scripted: its layout is
`print_status_config` in OpenZFS's zpool_main.c. A tree line is the base indent (a tab,
or spaces in copies that lost it), two spaces per depth, the name, the state, three
counts and a note; group headings (``logs``, ``cache`` ...) stand alone at depth 0.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from zsn import decode
from zsn.errors import ParseError
from zsn.format import excerpt
from zsn.zfs import units
from zsn.zfs.model import GROUPS, Pool, Scan, ScanFunction, ScanState, Vdev, VdevGroup

STATES = ("ONLINE", "DEGRADED", "FAULTED", "OFFLINE", "REMOVED", "UNAVAIL", "SUSPENDED",
          "SPLIT", "AVAIL", "INUSE", "UNKNOWN")
_KEY_RE = re.compile(r" {0,7}([a-z][a-z ]*?): ?(.*)")
_POOL_RE = re.compile(r"\s*pool: (.*)")
_COUNT = r"[0-9]+(?:[.,][0-9]+)?[KMGTPE]?"
_TREE_LINE_RE = re.compile(
    rf"(?P<name>\S.*?)\s+(?P<state>{'|'.join(STATES)})"
    rf"(?:\s+(?P<read>{_COUNT})\s+(?P<write>{_COUNT})\s+(?P<cksum>{_COUNT}))?"
    r"(?:\s+(?P<note>\S.*?))?\s*")
_HEADINGS: Mapping[str, VdevGroup] = {"logs": "logs", "dedup": "dedup", "special": "special",
                                      "cache": "cache", "spares": "spares"}
_DATA_ERRORS_RE = re.compile(r"(\d+) data errors")

# -- scan lines -----------------------------------------------------------------
_FUNCTION = r"(?P<function>scrub|resilver|error scrub)"
_IN_PROGRESS_RE = re.compile(rf"{_FUNCTION}(?: \([^)]*\))? in progress since (?P<when>.+)")
_PAUSED_RE = re.compile(rf"{_FUNCTION} paused since (?P<when>.+)")
_FINISHED_RE = re.compile(
    r"(?:(?P<function>error scrub|scrub) repaired|(?P<resilver>resilvered)) (?P<repaired>\S+)"
    r" in (?P<took>.+?) with (?P<errors>\d+) errors on (?P<when>.+)")
_LEGACY_DONE_RE = re.compile(  # Solaris: scrub completed after 0h0m with 0 errors on DATE
    r"(?P<function>scrub|resilver) completed after (?P<took>\S+) with (?P<errors>\d+) errors"
    r" on (?P<when>.+)")
_LEGACY_RUNNING_RE = re.compile(  # Solaris: resilver in progress, 0.14% done, 0h0m to go
    r"(?P<function>scrub|resilver) in progress, (?P<percent>[0-9.,]+)% done, (?P<eta>\S+) to go")
_CANCELED_RE = re.compile(rf"{_FUNCTION} canceled on (?P<when>.+)")
_STARTED_RE = re.compile(rf"{_FUNCTION} started on (?P<when>.+)")
_SIZE = r"[0-9.,]+[KMGTPEZ]?B?"
_SCANNED_RE = re.compile(  # 2.1: X scanned at R/s, Y issued at R/s, T total
    rf"(?P<examined>{_SIZE})(?: / (?P<total_a>{_SIZE}))? scanned(?: at (?P<scan_rate>{_SIZE})/s)?"
    rf", (?P<issued>{_SIZE})(?: / (?P<total_b>{_SIZE}))? issued(?: at| )?"
    rf"(?:\s*(?P<issue_rate>{_SIZE})/s)?(?:, (?P<total>{_SIZE}) total)?")
_OLD_SCANNED_RE = re.compile(  # 0.7: X scanned out of T at R/s, 1h2m to go
    rf"(?P<examined>{_SIZE}) scanned out of (?P<total>{_SIZE})"
    rf"(?: at (?P<issue_rate>{_SIZE})/s)?(?:, (?P<eta>\S+) to go)?")
_DONE_RE = re.compile(
    rf"(?P<repaired>{_SIZE}) (?:repaired|resilvered), (?P<percent>[0-9.,]+)% done"
    r"(?:, (?P<eta>.+?) to go|, no estimated completion time)?")


def parse_text(text: str) -> list[Pool]:
    """Every pool in the output of `zpool status [-p] [-P]` (one or more pools)."""
    pools = [_parse_pool(section) for section in _sections(text)]
    quiet = ("no pools available", "all pools are healthy")
    if not pools and text.strip() and not any(word in text for word in quiet):
        raise ParseError("no 'pool:' line in zpool status output: "
                         + excerpt(text.strip().splitlines()[0]))
    return pools


def _sections(text: str) -> Iterator[list[str]]:
    section: list[str] = []
    for line in text.splitlines():
        if _POOL_RE.fullmatch(line):
            if section:
                yield section
            section = [line]
        elif section:
            section.append(line)
    if section:
        yield section


def _parse_pool(lines: list[str]) -> Pool:
    fields: dict[str, list[str]] = {}
    key = ""
    config: list[str] = []
    in_config = False
    for line in lines:
        match = _KEY_RE.fullmatch(line)
        if match and not line.startswith("\t") and not (in_config and line.strip()
                                                          and match.group(1) != "errors"):
            key, value = match.group(1), match.group(2)
            in_config = key == "config"
            fields.setdefault(key, []).append(value.strip())
        elif in_config:
            config.append(line)
        elif key:
            fields[key].append(line.strip())
    name = fields["pool"][0]
    health = (fields.get("state") or ["UNKNOWN"])[0]
    errors_text = " ".join(fields.get("errors", []))
    found = _DATA_ERRORS_RE.search(errors_text)
    data_errors = int(found.group(1)) if found else 0
    if errors_text.startswith("Permanent errors"):  # -v: one line per damaged file
        data_errors = max(1, len([line for line in fields["errors"][1:] if line.strip()]))
    scan_lines = fields.get("scan") or fields.get("scrub") or []
    return Pool(
        name=name, health=health,
        vdevs=tuple(_parse_tree(config, name)),
        scan=parse_scan([line for line in scan_lines if line]),
        status=" ".join(fields.get("status", [])).strip(),
        action=" ".join(fields.get("action", [])).strip(),
        data_errors=data_errors,
    )


def _parse_tree(lines: list[str], pool: str) -> Iterator[Vdev]:
    header = next((i for i, line in enumerate(lines) if line.split()[:2] == ["NAME", "STATE"]),
                  None)
    if header is None:
        return
    base = lines[header][: len(lines[header]) - len(lines[header].lstrip())]
    group: VdevGroup = "data"
    stack: list[tuple[int, str]] = []
    rows: list[Vdev] = []
    for line in lines[header + 1:]:
        if not line.strip():
            if rows:
                break
            continue
        if line.startswith(base):
            rest = line[len(base):]
            depth = (len(rest) - len(rest.lstrip(" "))) // 2
        else:  # a copy whose indent went wrong: a member of the group being listed
            rest, depth = line.strip(), 1
        word = rest.strip()
        if depth == 0 and word in _HEADINGS:
            group = _HEADINGS[word]
            stack = [(0, word)]
            rows.append(Vdev(word, "", 0, group, None, kind="group"))
            continue
        match = _TREE_LINE_RE.fullmatch(rest.strip())
        if match is None:
            raise ParseError(f"pool {pool}: unexpected configuration line "
                             + excerpt(line.strip()))
        if group != "data" and depth == 0:
            depth = 1  # members of a group are below its heading
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parent = stack[-1][1] if stack else None
        stack.append((depth, match["name"]))
        rows.append(Vdev(
            name=match["name"], state=match["state"], depth=depth, group=group,
            parent=parent,
            read_errors=units.count(match["read"]) if match["read"] else None,
            write_errors=units.count(match["write"]) if match["write"] else None,
            checksum_errors=units.count(match["cksum"]) if match["cksum"] else None,
            kind="pool" if depth == 0 else "disk", note=(match["note"] or "").strip(),
        ))
    yield from _with_kinds(rows)


def _with_kinds(rows: list[Vdev]) -> Iterator[Vdev]:
    """Interior rows get their kind from their name (mirror-0 -> mirror), leaves disk/file."""
    parents = {row.parent for row in rows}
    for row in rows:
        if row.kind in ("pool", "group"):
            yield row
        elif row.name in parents:
            yield _replace_kind(row, interior_kind(row.name))
        else:
            yield _replace_kind(row, leaf_kind(row.name))


def interior_kind(name: str) -> str:
    """``mirror-0`` -> mirror, ``raidz2-1`` -> raidz2, ``draid1:4d:11c:1s-0`` -> draid1."""
    return name.split(":", 1)[0].rsplit("-", 1)[0]


def leaf_kind(name: str) -> str:
    return "file" if name.startswith("/") and not name.startswith("/dev/") else "disk"


def _replace_kind(row: Vdev, kind: str) -> Vdev:
    return row._replace(kind=kind)


def parse_scan(lines: list[str]) -> Scan | None:
    """The scan state from the ``scan:`` line and the lines under it (``None``: never)."""
    if not lines or lines[0].startswith("none requested"):
        return None
    first, rest = lines[0], lines[1:]
    match = _FINISHED_RE.fullmatch(first)
    if match:
        function: ScanFunction = "resilver" if match["resilver"] else _function(match["function"])
        return Scan(function, "finished", ended=units.ctime(match["when"]),
                    repaired=_size_or_none(match["repaired"]),
                    errors=int(match["errors"]), duration_seconds=units.duration(match["took"]))
    match = _LEGACY_DONE_RE.fullmatch(first)
    if match:
        return Scan(_function(match["function"]), "finished", ended=units.ctime(match["when"]),
                    errors=int(match["errors"]), duration_seconds=units.duration(match["took"]))
    match = _LEGACY_RUNNING_RE.fullmatch(first)
    if match:
        return Scan(_function(match["function"]), "scanning", percent=_percent(match["percent"]),
                    eta_seconds=units.duration(match["eta"]))
    match = _CANCELED_RE.fullmatch(first)
    if match:
        return Scan(_function(match["function"]), "canceled", ended=units.ctime(match["when"]))
    state: ScanState
    match = _IN_PROGRESS_RE.fullmatch(first)
    if match:
        state = "scanning"
        started = units.ctime(match["when"])
    else:
        match = _PAUSED_RE.fullmatch(first)
        if match is None:
            return unknown_scan(lines)
        state = "paused"
        started = None
        for line in rest:
            started_match = _STARTED_RE.fullmatch(line)
            if started_match:
                started = units.ctime(started_match["when"])
    progress: dict[str, Any] = {}
    for line in rest:
        for pattern in (_SCANNED_RE, _OLD_SCANNED_RE, _DONE_RE):
            found = pattern.fullmatch(line)
            if found:
                progress.update({k: v for k, v in found.groupdict().items() if v is not None})
    total = progress.get("total") or progress.get("total_b") or progress.get("total_a")
    percent = _percent(progress.get("percent"))
    return Scan(
        _function(match["function"]), state, started=started,
        examined=_size_or_none(progress.get("examined")),
        issued=_size_or_none(progress.get("issued")),
        total=_size_or_none(total),
        rate=_size_or_none(progress.get("issue_rate")),
        percent=percent,
        eta_seconds=units.duration(progress["eta"]) if "eta" in progress else None,
        repaired=_size_or_none(progress.get("repaired")),
    )


def unknown_scan(lines: list[str]) -> Scan:
    """A scan zsn cannot read: said so (with zpool's own words), never dropped."""
    text = " / ".join(line.strip() for line in lines if line.strip())
    function: ScanFunction = "resilver" if "resilver" in text else \
        "error scrub" if "error scrub" in text else "scrub"
    return Scan(function, "unknown", text=text)


def _function(text: str) -> ScanFunction:
    return "error scrub" if text == "error scrub" else \
        "resilver" if text == "resilver" else "scrub"


def _size_or_none(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return units.size(text)
    except ParseError:
        return None


def _percent(text: str | None) -> float | None:
    if text is None:
        return None
    return min(100.0, max(0.0, float(text.replace(",", "."))))


# -- JSON (OpenZFS 2.3+: zpool status -j [--json-int]) ---------------------------
def parse_json(text: str) -> list[Pool]:
    """Every pool in `zpool status -j` output; numbers may be strings, ints or human sizes."""
    document = decode.from_json(text, dict[str, Any], "zpool status -j")
    pools = document.get("pools")
    if not isinstance(pools, dict):
        raise ParseError("zpool status -j: no 'pools' object")
    return [_json_pool(name, data) for name, data in pools.items() if isinstance(data, dict)]


def _json_pool(name: str, data: dict[str, Any]) -> Pool:
    rows: list[Vdev] = []
    root = (data.get("vdevs") or {}).get(name) or {}
    rows.append(_json_vdev(name, root, 0, "data", None, kind="pool",
                           state=str(data.get("state", root.get("state", "UNKNOWN")))))
    _json_children(root, 1, "data", name, rows)
    for group in GROUPS[1:]:
        key = "l2cache" if group == "cache" else group
        members = data.get(key) or data.get(group)
        if isinstance(members, dict) and members:
            rows.append(Vdev(group, "", 0, group, None, kind="group"))
            _json_children({"vdevs": members}, 1, group, group, rows)
    errors = _json_int(data.get("error_count")) or 0
    return Pool(name=name, health=str(data.get("state", "UNKNOWN")), vdevs=tuple(rows),
                scan=_json_scan(data.get("scan_stats")), status=_json_text(data, "status"),
                action=_json_text(data, "action"), data_errors=errors)


def _json_children(parent: dict[str, Any], depth: int, group: VdevGroup, parent_name: str,
                   rows: list[Vdev]) -> None:
    for key, child in (parent.get("vdevs") or {}).items():
        if not isinstance(child, dict):
            continue
        name = str(child.get("path") or child.get("name") or key)
        kind = str(child.get("vdev_type") or "disk")
        rows.append(_json_vdev(name, child, depth, group, parent_name, kind))
        _json_children(child, depth + 1, group, name, rows)


def _json_vdev(name: str, data: dict[str, Any], depth: int, group: VdevGroup,
               parent: str | None, kind: str, state: str | None = None) -> Vdev:
    vdev_state = state or str(data.get("state", "UNKNOWN"))
    if vdev_state == "HEALTHY":  # the man page's example; the code prints ONLINE
        vdev_state = "ONLINE"
    notes = [f"{k}: {v}" for k, v in data.items() if k in ("status", "aux", "was")]
    return Vdev(name=name, state=vdev_state, depth=depth, group=group, parent=parent,
                read_errors=_json_int(data.get("read_errors")),
                write_errors=_json_int(data.get("write_errors")),
                checksum_errors=_json_int(data.get("checksum_errors")),
                kind=kind, note="; ".join(notes))


def _json_scan(data: object) -> Scan | None:
    if not isinstance(data, dict):
        return None
    function = str(data.get("function", "NONE")).lower().replace("_", " ")
    state = str(data.get("state", "NONE")).lower()
    if state == "none":
        return None
    if function not in ("scrub", "resilver", "error scrub") or \
            state not in ("scanning", "finished", "canceled"):
        return unknown_scan([f"function {function}, state {state}"])
    paused = (_json_int(data.get("scrub_pause")) or _json_int(data.get("pass_scrub_pause"))
              or 0) > 0
    scan_state: ScanState = "finished" if state == "finished" else \
        "canceled" if state == "canceled" else "paused" if paused else "scanning"
    total = _json_int(data.get("to_examine"))
    issued = _json_int(data.get("issued"))
    percent = None
    if total and issued is not None and scan_state in ("scanning", "paused"):
        percent = min(100.0, 100.0 * issued / total)
    return Scan(_function(function), scan_state,
                started=_json_time(data.get("start_time")),
                ended=_json_time(data.get("end_time")) if scan_state in ("finished", "canceled")
                else None,
                examined=_json_int(data.get("examined")), issued=issued, total=total,
                percent=percent, repaired=_json_int(data.get("processed")),
                errors=_json_int(data.get("errors")) if scan_state == "finished" else None)


def _json_int(value: object) -> int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, str):
        try:
            return units.size(value)
        except ParseError:
            return None
    return None


def _json_time(value: object) -> float | None:
    if isinstance(value, str) and not units.is_number(value.strip()):
        return units.ctime(value)
    seconds = _json_int(value)
    return float(seconds) if seconds else None


def _json_text(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    return value if isinstance(value, str) and value != "OK" else ""
