"""The three ifupdown implementations' own reading of an interfaces tree, for tests.

Debian's ifupdown, ifupdown2 and ifupdown-ng conflict with each other, so scripts/test.sh
unpacks each (never installs it) into /var/cache/zsn-lab/dialects/PACKAGE; here their
``ifquery`` runs from there, in a private mount namespace where the tree's
``/etc/network`` is bind-mounted over the real one (``source`` lines name absolute
paths, and must find the tree's files).

    ifquery("ifupdown2", (root, ["bond0", "br0"]), (other_root, [...])) -> [Query, Query]

gives, per interface, the options the implementation ends up with (its own spelling,
in its order, several stanzas of one name merged as it prints them), or the one-line
reason it refused the file.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

DIALECTS_DIR = Path(os.environ.get("ZSN_DIALECTS_DIR", "/var/cache/zsn-lab/dialects"))
PYTHON = "/usr/bin/python3"
"""ifupdown2 runs on Debian's python3 (what its package depends on)."""


def require_dialects() -> None:
    from tests.needs import unavailable  # pytest: not in the namespace child

    missing = [name for name in ("ifupdown", "ifupdown2", "ifupdown-ng")
               if not (DIALECTS_DIR / name / "VERSION").is_file()]
    if missing or os.geteuid() != 0:
        unavailable(f"ifupdown implementations not unpacked under {DIALECTS_DIR} "
                    f"({', '.join(missing) or 'root needed'}): run scripts/test.sh")


def version(dialect: str) -> str:
    return (DIALECTS_DIR / dialect / "VERSION").read_text().strip()


@dataclass
class Query:
    options: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    """Interface -> (option, value) as the implementation prints them."""
    refused: str | None = None
    """Why it refused the whole file (None: it read it)."""


def ifquery(dialect: str, *trees: tuple[Path, list[str]]) -> list[Query]:
    """The implementation's reading of each (root, interface names), in one namespace."""
    require_dialects()
    request = json.dumps([[str(root), names] for root, names in trees])
    argv = ["unshare", "--mount", "--propagation", "private", sys.executable, "-m",
            "tests.lab.dialects", dialect]
    result = subprocess.run(argv, input=request, capture_output=True, text=True, timeout=180,
                            check=False, cwd=Path(__file__).parents[2])
    if result.returncode != 0:
        raise RuntimeError(f"ifquery sandbox failed: {result.stderr[-2000:]}")
    return [Query({name: [(key, value) for key, value in pairs]
                   for name, pairs in data["options"].items()}, data["refused"])
            for data in json.loads(result.stdout)]


# -- inside the mount namespace -----------------------------------------------------------
def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def _classic(names: list[str]) -> dict[str, object]:
    binary = str(DIALECTS_DIR / "ifupdown/root/sbin/ifquery")
    state = "/run/zsn-ifquery-state"
    os.makedirs(state, exist_ok=True)
    options: dict[str, list[tuple[str, str]]] = {}
    for name in names:
        result = _run([binary, "-i", "/etc/network/interfaces", f"--state-dir={state}", name])
        if "couldn't read interfaces file" in result.stderr:
            return {"options": {}, "refused": result.stderr.strip().splitlines()[0]}
        if result.returncode != 0:
            continue
        pairs = []
        for line in result.stdout.splitlines():
            key, _, value = line.partition(": ")
            pairs.append((key, value))
        options[name] = pairs
    return {"options": options, "refused": None}


def _ifupdown2(names: list[str]) -> dict[str, object]:
    launcher = ("import runpy, sys; sys.argv[0] = 'ifquery'; "
                f"sys.path.insert(0, {str(DIALECTS_DIR / 'ifupdown2')!r}); "
                "runpy.run_module('ifupdown2.__main__', run_name='__main__')")
    wanted = list(names)
    while wanted:
        result = _run([PYTHON, "-c", launcher, "-i", "/etc/network/interfaces", "-o", "json",
                       *wanted])
        missing = re.search(r"cannot find interfaces: (.*)", result.stderr)
        if missing:
            gone = set(missing.group(1).split())
            wanted = [name for name in wanted if name not in gone]
            continue
        if result.returncode != 0 and not result.stdout.strip():
            return {"options": {}, "refused": (result.stderr.strip() or "failed").splitlines()[0]}
        options: dict[str, list[tuple[str, str]]] = {}
        for stanza in json.loads(result.stdout or "[]"):
            options.setdefault(stanza["name"], []).extend(
                (key, value) for key, values in stanza.get("config", {}).items()
                for value in (values if isinstance(values, list) else [values]))
        return {"options": options, "refused": None}
    return {"options": {}, "refused": None}


def _ng(names: list[str]) -> dict[str, object]:
    binary = str(DIALECTS_DIR / "ifupdown-ng/root/sbin/ifquery")
    listed = _run([binary, "-i", "/etc/network/interfaces", "-L"])
    if "could not parse" in listed.stderr:
        return {"options": {}, "refused": listed.stderr.strip().splitlines()[-1]}
    known = set(listed.stdout.split())
    wanted = [name for name in names if name in known]
    options: dict[str, list[tuple[str, str]]] = {}
    if not wanted:
        return {"options": options, "refused": None}
    result = _run([binary, "-i", "/etc/network/interfaces", *wanted])
    current: list[tuple[str, str]] | None = None
    for line in result.stdout.splitlines():
        if line.startswith("iface "):
            current = options.setdefault(line.split()[1], [])
        elif line.startswith("  ") and current is not None:
            key, _, value = line.strip().partition(" ")
            current.append((key, value.rstrip()))
    return {"options": options, "refused": None}


def main(dialect: str) -> None:
    subprocess.run(["mount", "--make-rprivate", "/"], check=True, timeout=10)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", "/run"], check=True, timeout=10)
    reader = {"ifupdown": _classic, "ifupdown2": _ifupdown2, "ifupdown-ng": _ng}[dialect]
    answers = []
    for root, names in json.load(sys.stdin):
        subprocess.run(["mount", "--bind", str(Path(root) / "etc/network"), "/etc/network"],
                       check=True, timeout=10)
        answers.append(reader(names))
        subprocess.run(["umount", "/etc/network"], check=True, timeout=10)
    json.dump(answers, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
