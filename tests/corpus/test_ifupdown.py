"""interfaces files from the three ifupdown implementations' own test suites and
examples, each read in its implementation's dialect (the marker files of that
package installed under the root), and Debian's files in all three.

For every file, zsn's reading of each interface (the options that make bonds, bridges,
VLANs and MTUs: ``mtu``, ``bond-*``, ``bridge-ports``/``-stp``, ``vlan-*``, ifupdown-ng's
``use`` and ``requires``) must equal what that implementation's own ``ifquery`` prints,
and a file it refuses (Debian's ifupdown refuses a whole file for one ``iface`` line
without a family and method) zsn must refuse as well, naming the line. Then zsn writes
an edit: a new MTU on each bond, bridge and VLAN the file defines, and a new bond
``zsnb0`` of two new members; ``ifquery`` must read the result with exactly those
changes, in the dialect's own spelling, every other byte of the file kept.
"""

from __future__ import annotations

import difflib
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.corpus.tally import TALLY, Outcome
from tests.lab.dialects import (
    DIALECTS_DIR,
    Query,
    close_sandboxes,
    ifquery,
    require_dialects,
    version,
)
from zsn.links.persist import LinkConfig, Upsert
from zsn.links.persist.ifupdown import CLASSIC, IFUPDOWN, IFUPDOWN2, NG, read
from zsn.system.host import Host

CORPUS = Path(__file__).parents[1] / "fixtures" / "corpus" / "ifupdown"
FAMILY = "ifupdown"
MARKERS = {CLASSIC: "lib/ifupdown", IFUPDOWN2: "usr/share/ifupdown2",
           NG: "etc/network/ifupdown-ng.conf"}
RELEVANT = re.compile(r"mtu|bond-.*|slaves|bridge-ports|bridge-stp|vlan-raw-device|vlan-id|"
                      r"requires")
USES = {"bond", "bridge"}


def corpus_files() -> list[tuple[str, str]]:
    """(file under the corpus, dialect) for every run."""
    runs = []
    for path in sorted(CORPUS.rglob("*")):
        if not path.is_file() or path.name == "SOURCES.md":
            continue
        relative = str(path.relative_to(CORPUS))
        if relative.startswith(("debian-ifupdown/", "debian-packages/", "debian-wiki/")):
            runs += [(relative, CLASSIC), (relative, IFUPDOWN2), (relative, NG)]
        elif relative.startswith("ifupdown2/"):
            runs.append((relative, IFUPDOWN2))
        else:
            runs.append((relative, NG))
    return runs


def build(root: Path, name: str, dialect: str) -> Host:
    (root / "etc/network").mkdir(parents=True)
    shutil.copyfile(CORPUS / name, root / "etc/network/interfaces")
    marker = root / MARKERS[dialect]
    marker.parent.mkdir(parents=True, exist_ok=True)
    status = root / "var/lib/dpkg/status"  # the package as dpkg lists it installed
    status.parent.mkdir(parents=True)
    status.write_text(f"Package: {dialect}\nStatus: install ok installed\n"
                      f"Version: {version(dialect)}\n\n")
    if dialect == NG:  # the package's own settings file
        shutil.copyfile(DIALECTS_DIR / "ifupdown-ng/root/etc/network/ifupdown-ng.conf", marker)
    else:
        marker.mkdir()
    return Host(root)


def normal(key: str, dialect: str) -> str:
    return key.replace("_", "-") if dialect != NG else key


def relevant(pairs: list[tuple[str, str]], dialect: str) -> list[tuple[str, str]]:
    found = []
    for key, value in pairs:
        key = normal(key, dialect)
        if RELEVANT.fullmatch(key) or (key == "use" and value in USES):
            found.append((key, " ".join(value.split())))
    return sorted(set(found) if dialect == NG else found)


def zsn_options(host: Host, dialect: str) -> tuple[dict[str, list[tuple[str, str]]], bool]:
    reading = read(host, dialect)
    refused = any(u.kind == "ifupdown-refuses" for u in reading.unread)
    options = {name: relevant([(k, v) for k, v, _s, _l in iface.options], dialect)
               for name, iface in reading.ifaces.items()
               if iface.stanzas and not iface.template}
    return options, refused


def names_in(text: str) -> list[str]:
    return sorted({m.group(1) for m in re.finditer(
        r"^\s*(?:iface|auto|template|interface)\s+(\S+)", text, re.MULTILINE)} | {"lo"})


def compare(query: Query, options: dict[str, list[tuple[str, str]]], dialect: str) -> None:
    for name, pairs in query.options.items():
        if name == "lo" and name not in options:
            continue
        assert options.get(name, []) == relevant(pairs, dialect), name
    for name, pairs in options.items():
        if pairs:
            assert name in query.options, f"{name} is not an interface for {dialect}"


def helpers_reading(query: Query, dialect: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    """(kind, members) of every bond and bridge, as the dialect's own bond and bridge
    code finds them in what its ifquery printed:

    - Debian's ifupdown hands each option to the hook scripts as ``IF_NAME`` (upper
      case, ``-`` as ``_``; execute.c), the later of one name winning in their shell;
      ifenslave's pre-up hook reads ``IF_BOND_SLAVES=${IF_BOND_SLAVES:-$IF_SLAVES}``, is
      a member's when ``IF_BOND_MASTER`` is set, else a bond's when the slaves or
      ``IF_BOND_MODE`` are; bridge-utils' ifupdown.sh acts on a non-empty
      ``IF_BRIDGE_PORTS`` (``none``: no port);
    - ifupdown2's bond addon takes the first ``bond-slaves`` (get_attr_value_first),
      its bridge addon every ``bridge-ports`` line (_get_ifaceobj_bridge_ports);
    - ifupdown-ng runs the bond and bridge executors an interface uses, with its
      options as ``IF_NAME`` (lifecycle.c: each one pushed, the shell keeps the last):
      ``IF_BOND_MEMBERS``, ``IF_BRIDGE_PORTS`` (a bridge's ``requires`` when it has none).
    """
    found: dict[str, tuple[str, tuple[str, ...]]] = {}
    masters: dict[str, tuple[str, ...]] = {}
    """ifenslave: a member's stanza (bond-master) enslaves it too."""
    for name, pairs in query.options.items():
        if dialect == IFUPDOWN2:
            bond_lines = [v for k, v in pairs if k == "bond-slaves"]
            port_lines = [v for k, v in pairs if k == "bridge-ports"]
            if bond_lines:
                found[name] = ("bond", _members(bond_lines[0]))
            elif port_lines:
                found[name] = ("bridge", _members(" ".join(port_lines)))
            continue
        environment: dict[str, str] = {}
        for key, value in pairs:
            if dialect == CLASSIC and key in ("pre-up", "up", "down", "post-down"):
                continue
            environment["IF_" + key.upper().replace("-", "_")] = value
        if dialect == CLASSIC:
            slaves = environment.get("IF_BOND_SLAVES") or environment.get("IF_SLAVES")
            if environment.get("IF_BOND_MASTER"):
                masters[environment["IF_BOND_MASTER"]] = masters.get(
                    environment["IF_BOND_MASTER"], ()) + (name,)
            elif slaves or environment.get("IF_BOND_MODE"):
                found[name] = ("bond", _members(slaves or ""))
            elif environment.get("IF_BRIDGE_PORTS"):
                found[name] = ("bridge", _members(environment["IF_BRIDGE_PORTS"]))
            continue
        uses = {value for key, value in pairs if key == "use"}
        if "bond" in uses:
            found[name] = ("bond", _members(environment.get("IF_BOND_MEMBERS", "")))
        elif "bridge" in uses:
            ports = environment.get("IF_BRIDGE_PORTS", environment.get("IF_REQUIRES", ""))
            found[name] = ("bridge", _members(ports))
    for master, members in masters.items():
        if master in found and found[master][0] == "bond":
            own = found[master][1]
            found[master] = ("bond", own + tuple(m for m in members if m not in own))
    return {name: (kind, tuple(sorted(members))) for name, (kind, members) in found.items()}


def _members(value: str) -> tuple[str, ...]:
    words = value.split()
    return () if words in (["none"], []) else tuple(words)


RUNS = corpus_files()


@pytest.fixture(scope="module", autouse=True)
def tools() -> Iterator[None]:
    require_dialects()
    yield
    close_sandboxes()


@pytest.mark.parametrize(("name", "dialect"), RUNS, ids=[f"{d}:{n}" for n, d in RUNS])
def test_ifupdown_file(tmp_path: Path, name: str, dialect: str) -> None:
    host = build(tmp_path / "before", name, dialect)
    text = (CORPUS / name).read_text()
    outcome = Outcome()
    TALLY.record(FAMILY, f"{dialect}:{name}", outcome)
    options, refused = zsn_options(host, dialect)
    persisted = IFUPDOWN.read(host)
    assert persisted.dialect == dialect
    templates = [u for u in persisted.unread if u.kind == "template"]
    if templates:  # what ifupdown2 reads depends on mako: zsn reads none of it
        assert templates[0].blocking and not persisted.configs
        outcome.read, outcome.refused = True, "template"
        return
    blocking = [u for u in persisted.unread if u.blocking]
    # The edit, on a copy: an MTU on every link the file defines, a new bond of two members.
    edited = Host(tmp_path / "after")
    shutil.copytree(host.root, edited.root, symlinks=True)
    changes = [
        Upsert(LinkConfig(c.name, c.kind, mtu=1400 + n), frozenset({"mtu"}))
        for n, c in enumerate(sorted(persisted.configs.values(), key=lambda c: c.name))]
    bond = LinkConfig("zsnb0", "bond", ("zsnm1", "zsnm2"), mtu=9000, mode="802.3ad",
                      miimon=100, lacp_rate="fast")
    changes.append(Upsert(bond))
    after_text = text
    if not refused and not blocking:
        for edit in IFUPDOWN.plan(edited, [*changes], IFUPDOWN.read(edited)).edits:
            edit.apply()
        after_text = (edited.root / "etc/network/interfaces").read_text()
    names = sorted(set(names_in(text)) | set(options))
    query, after = ifquery(dialect, (host.root, names), (edited.root, sorted(
        set(names_in(after_text)) | set(options) | {"zsnb0"})))
    assert refused == (query.refused is not None), query.refused
    if refused:
        [unread] = [u for u in persisted.unread if u.kind == "ifupdown-refuses"][:1]
        assert unread.blocking and unread.line is not None
        outcome.read, outcome.refused = True, "ifupdown-refuses"
        return
    compare(query, options, dialect)
    expressions = {n for u in persisted.unread if u.kind == "port-expression" for n in u.names}
    zsn_links = {c.name: (c.kind, tuple(sorted(c.members)))
                 for c in persisted.configs.values() if c.kind in USES}
    assert zsn_links == {n: link for n, link in helpers_reading(query, dialect).items()
                         if n not in expressions}
    outcome.read = True
    if blocking:
        outcome.refused = blocking[0].kind
        return
    if not text.endswith("\n"):
        assert after_text.startswith(text + "\n")  # a line zsn adds needs the file's last \n
        text += "\n"
    for line in difflib.ndiff(text.splitlines(keepends=True), after_text.splitlines(True)):
        if line.startswith("- "):
            assert re.match(r"\s*mtu\s", line[2:]), f"changed: {line!r}"
    assert after.refused is None
    after_options, _refused = zsn_options(edited, dialect)
    compare(after, after_options, dialect)
    for change in changes[:-1]:
        assert ("mtu", str(change.config.mtu)) in relevant(after.options[change.name], dialect)
    members_key = "bond-members" if dialect == NG else "bond-slaves"
    assert (members_key, "zsnm1 zsnm2") in relevant(after.options["zsnb0"], dialect)
    if dialect == NG:
        assert ("use", "bond") in relevant(after.options["zsnb0"], dialect)
    reread = IFUPDOWN.read(edited).configs
    assert reread["zsnb0"] == bond
    for change in changes[:-1]:
        assert reread[change.name].mtu == change.config.mtu
    outcome.edited = True
