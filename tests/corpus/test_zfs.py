"""`zpool status` outputs: the captures of exporters' and monitors' test data (jc,
netdata, telegraf, node_exporter, zpool-status-exporter, libzetta, check_zpool_scrub),
OpenZFS's and FreeBSD's documentation, and zsn's own lab (tests/fixtures/zfs*, each
with its SOURCES.md).

Nothing may be lost silently: every pool of the output becomes a pool, every row of its
configuration a vdev, and every ``scan:`` line other than "none requested" a scan zsn
either understands (scanning, paused, finished, canceled) or reports as not
understood with zpool's own words (the pane's "?", lint ZFS014), never "never
scrubbed". zsn only reads these: there is nothing to edit.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.corpus.tally import TALLY, Outcome
from zsn.zfs import status

FIXTURES = Path(__file__).parents[1] / "fixtures"
FAMILY = "zfs"
FILES = sorted(str(p.relative_to(FIXTURES)) for folder in ("zfs", "zfs-vm", "zfs-lab")
               for p in (FIXTURES / folder).glob("zpool-status*") if p.is_file())
_SCAN = re.compile(r"^ *(?:scan|scrub): (.*)$", re.MULTILINE)


def config_rows(section: str) -> list[str]:
    """The names of a pool's configuration rows, read straight from the text."""
    lines = section.splitlines()
    header = next((i for i, line in enumerate(lines) if line.split()[:2] == ["NAME", "STATE"]),
                  None)
    if header is None:
        return []
    rows: list[str] = []
    for line in lines[header + 1:]:
        if re.match(r" {0,7}[a-z][a-z ]*: ", line):  # the next key (errors:) ends the tree
            break
        if not line.strip():
            if rows:
                break
            continue
        rows.append(line.split()[0])
    return rows


@pytest.mark.parametrize("name", FILES)
def test_zpool_status(name: str) -> None:
    text = (FIXTURES / name).read_text()
    outcome = Outcome()
    TALLY.record(FAMILY, name, outcome)
    if text.lstrip().startswith("{"):
        pools = status.parse_json(text)
        assert pools
        outcome.read = True
        return
    sections = re.split(r"(?m)^(?=\s*pool: )", text)
    sections = [s for s in sections if re.match(r"\s*pool: ", s)]
    if not sections:  # a fragment of scan lines, or "all pools are healthy"
        with pytest.raises(Exception):  # noqa: B017 - any ParseError: refused, not misread
            if "all pools are healthy" in text or "no pools available" in text:
                raise ValueError("no pool to read")
            status.parse_text(text)
        outcome.read, outcome.refused = True, "no-pool-in-output"
        return
    pools = status.parse_text(text)
    assert [p.name for p in pools] == [re.match(r"\s*pool: (.*)", s).group(1).strip()  # type: ignore[union-attr]
                                        for s in sections]
    unknown = False
    for pool, section in zip(pools, sections, strict=True):
        assert [v.name for v in pool.vdevs] == config_rows(section)
        scan = _SCAN.search(section)
        if scan is None or scan.group(1).startswith("none requested"):
            assert pool.scan is None
            continue
        assert pool.scan is not None, f"{pool.name}: scan line lost: {scan.group(1)!r}"
        if pool.scan.state == "unknown":
            assert pool.scan.text.startswith(scan.group(1).strip())
            unknown = True
    outcome.read = True
    if unknown:
        outcome.refused = "scan-not-understood"
