"""netctl's own example profiles (docs/examples of joukewitteveen/netctl), read by zsn and
by bash, which is what netctl sources them with.

Every variable zsn reads must have the value bash gives it (a plain value or an array,
quotes and escapes undone); a profile zsn cannot read without running bash it must
refuse, naming the line. Each bond, bridge and VLAN profile then gets a new MTU
through zsn: bash must still source the result, every other variable must keep its
value, and every other byte of the file must stay.
"""

from __future__ import annotations

import difflib
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.corpus.tally import TALLY, Outcome
from tests.needs import needs_tools
from zsn.bash import parse_assignments
from zsn.errors import ParseError
from zsn.links.persist import LinkConfig, Upsert
from zsn.links.persist.netctl import NETCTL, Profile, profile_config
from zsn.system.host import Host

CORPUS = Path(__file__).parents[1] / "fixtures" / "corpus" / "netctl"
FAMILY = "netctl"
FILES = sorted(str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*") if p.is_file()
               and p.name != "SOURCES.md")
_PRINT = """
set -u
source "$1"
shift
for name in "$@"; do
    declare -p "$name" >/dev/null 2>&1 || continue
    if [[ $(declare -p "$name") == "declare -a"* ]]; then
        declare -n ref="$name"
        printf 'A\\0%s\\0%d\\0' "$name" "${#ref[@]}"
        printf '%s\\0' "${ref[@]}"
        unset -n ref
    else
        printf 'S\\0%s\\0%s\\0' "$name" "${!name}"
    fi
done
"""


def bash_reading(path: Path, names: list[str]) -> dict[str, str | tuple[str, ...]]:
    """The variables as bash has them after sourcing the profile (netctl's reading)."""
    result = subprocess.run(["env", "-i", "bash", "--norc", "--noprofile", "-c", _PRINT,
                             "bash", str(path), *names], capture_output=True, timeout=30,
                            check=True)
    fields = result.stdout.decode().split("\0")
    found: dict[str, str | tuple[str, ...]] = {}
    at = 0
    while at < len(fields) - 1:
        kind, name = fields[at], fields[at + 1]
        if kind == "S":
            found[name] = fields[at + 2]
            at += 3
        else:
            count = int(fields[at + 2])
            found[name] = tuple(fields[at + 3:at + 3 + count])
            at += 3 + count
    return found


@pytest.fixture(scope="module", autouse=True)
def tools() -> None:
    needs_tools("bash")


@pytest.mark.parametrize("name", FILES)
def test_netctl_profile(tmp_path: Path, name: str) -> None:
    folder = tmp_path / "etc/netctl"
    folder.mkdir(parents=True)
    profile = folder / Path(name).name
    shutil.copyfile(CORPUS / name, profile)
    text = profile.read_text()
    outcome = Outcome()
    TALLY.record(FAMILY, name, outcome)
    host = Host(tmp_path)
    persisted = NETCTL.read(host)
    try:
        assignments = parse_assignments(text, name)
    except ParseError:
        [unread] = persisted.unread
        assert unread.kind == "bash-code" and unread.line is not None
        outcome.read, outcome.refused = True, "bash-code"
        return
    zsn = {a.name: a.value for a in assignments}
    assert bash_reading(profile, sorted(zsn)) == zsn
    outcome.read = True
    configs = [c for c in persisted.configs.values() if c.source.endswith(Path(name).name)]
    if not configs:
        return
    [config] = configs
    plan = NETCTL.plan(host, [Upsert(LinkConfig(config.name, config.kind, mtu=1400),
                                     frozenset({"mtu"}))], persisted)
    for edit in plan.edits:
        edit.apply()
    after = profile.read_text()
    for line in difflib.ndiff(text.splitlines(keepends=True), after.splitlines(True)):
        if line.startswith("- "):
            raise AssertionError(f"changed: {line!r}")
    reread = {a.name: a.value for a in parse_assignments(after, name)}
    assert bash_reading(profile, sorted(reread)) == reread
    assert {k: v for k, v in reread.items() if k != "ExecUpPost"} == {
        k: v for k, v in zsn.items() if k != "ExecUpPost"}
    reparsed = profile_config(Profile.parsed(str(profile), None, after))
    assert reparsed is not None and reparsed.mtu == 1400
    outcome.edited = True
