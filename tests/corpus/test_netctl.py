"""netctl's own example profiles (docs/examples of joukewitteveen/netctl) and the
ArchWiki's bridge profiles, read by zsn and by bash, which is what netctl sources them
with.

Every variable zsn reads must have the value bash gives it (a plain value or an array,
quotes and escapes undone); a profile zsn cannot read without running bash it must
refuse, naming the line. A hook whose value bash computes (``ExecUpPost="... $(cat
...)"``) zsn keeps opaque: its text exactly as in the file, and what is certain of it
what bash gives when its expansions give nothing (bash runs here restricted, with no
PATH: a command substitution runs no program). Each bond, bridge and VLAN profile then
gets a new MTU through zsn (one whose MTU would have to go into an opaque hook is
refused, naming its line, and gets a new member instead): bash must still source the
result, every other variable must keep its value, and every other byte of the file
must stay.
"""

from __future__ import annotations

import difflib
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from tests.corpus.tally import TALLY, Outcome
from tests.needs import needs_tools
from zsn.bash import NETCTL_HOOKS, Opaque, Value, parse_assignments
from zsn.errors import ParseError, ValidationError
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
declare -A defined
while read -r set_name; do defined[$set_name]=1; done < <(compgen -v)
for name in "$@"; do
    [[ ${defined[$name]-} ]] || continue
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
    """The variables as bash has them after sourcing the profile (netctl's reading);
    restricted and without PATH, so an expansion in it runs no program."""
    result = subprocess.run(["env", "-i", "PATH=/nonexistent", "/bin/bash", "--norc",
                             "--noprofile", "-r", "-c", _PRINT, "bash", path.name, *names],
                            capture_output=True, timeout=30, check=True, cwd=path.parent)
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
        assignments = parse_assignments(text, name, NETCTL_HOOKS)
    except ParseError:
        [unread] = persisted.unread
        assert unread.kind == "bash-code" and unread.line is not None
        outcome.read, outcome.refused = True, "bash-code"
        return
    zsn = {a.name: a.value for a in assignments}
    assert bash_reading(profile, sorted(zsn)) == expected(zsn)
    hooks = [a for a in assignments if isinstance(a.value, Opaque)]
    for hook in hooks:  # kept byte for byte, and said
        assert text[hook.start:hook.end] == f"{hook.name}={hook.value.text}"  # type: ignore[union-attr]
        assert any(u.kind == "hook" and u.line == hook.line for u in persisted.unread)
    outcome.read = True
    configs = [c for c in persisted.configs.values() if c.source.endswith(Path(name).name)]
    if not configs:
        return
    [config] = configs
    change = Upsert(LinkConfig(config.name, config.kind, mtu=1400), frozenset({"mtu"}))
    if any(hook.name == "ExecUpPost" for hook in hooks):
        with pytest.raises(ValidationError, match=rf":{hooks[0].line}: ExecUpPost uses an"):
            NETCTL.plan(host, [change], persisted)
        change = Upsert(replace(config, members=(*config.members, "zsnm1")),
                        frozenset({"members"}))
    for edit in NETCTL.plan(host, [change], persisted).edits:
        edit.apply()
    after = profile.read_text()
    for line in difflib.ndiff(text.splitlines(keepends=True), after.splitlines(True)):
        if line.startswith("- ") and not line[2:].startswith("BindsToInterfaces="):
            raise AssertionError(f"changed: {line!r}")
    reread = {a.name: a.value for a in parse_assignments(after, name, NETCTL_HOOKS)}
    assert bash_reading(profile, sorted(reread)) == expected(reread)
    unchanged = ("ExecUpPost", "BindsToInterfaces")
    assert {k: v for k, v in reread.items() if k not in unchanged} == {
        k: v for k, v in zsn.items() if k not in unchanged}
    reparsed = profile_config(Profile.parsed(str(profile), None, after))
    assert reparsed is not None
    if "mtu" in change.fields:
        assert reparsed.mtu == 1400
    else:
        assert reparsed.members == (*config.members, "zsnm1")
        assert reread["ExecUpPost"] == zsn["ExecUpPost"]
    outcome.edited = True


def expected(values: dict[str, Value]) -> dict[str, str | tuple[str, ...]]:
    """What bash (with no program to run) gives for zsn's reading: an opaque hook's
    certain text, its expansions empty."""
    return {name: value.literal.replace("\0", "") if isinstance(value, Opaque) else value
            for name, value in values.items()}
