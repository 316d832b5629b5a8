"""The three ifupdown implementations' own reading of an interfaces tree, for tests.

Debian's ifupdown, ifupdown2 and ifupdown-ng conflict with each other, so scripts/test.sh
unpacks each (never installs it) into /var/cache/zsn-lab/dialects/PACKAGE; here their
``ifquery`` runs from there, in a private mount namespace where the tree's
``/etc/network`` is bind-mounted over the real one (``source`` lines name absolute
paths, and must find the tree's files). One such namespace per implementation serves
the whole run; ifupdown2's queries are forks of one process that imported it.

    ifquery("ifupdown2", (root, ["bond0", "br0"]), (other_root, [...])) -> [Query, Query]

gives, per interface, the options the implementation ends up with (its own spelling,
in its order, several stanzas of one name merged as it prints them), or the one-line
reason it refused the file.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import select
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


_SANDBOXES: dict[str, subprocess.Popen[str]] = {}
"""One sandbox per implementation, kept for the run (its start-up, and ifupdown2's
imports, would otherwise cost more than the queries)."""


def ifquery(dialect: str, *trees: tuple[Path, list[str]]) -> list[Query]:
    """The implementation's reading of each (root, interface names), in its namespace."""
    require_dialects()
    sandbox = _SANDBOXES.get(dialect)
    if sandbox is None or sandbox.poll() is not None:
        argv = ["unshare", "--mount", "--propagation", "private", sys.executable, "-m",
                "tests.lab.dialects", dialect]
        sandbox = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   text=True, cwd=Path(__file__).parents[2])
        _SANDBOXES[dialect] = sandbox
    assert sandbox.stdin is not None and sandbox.stdout is not None
    sandbox.stdin.write(json.dumps([[str(root), names] for root, names in trees]) + "\n")
    sandbox.stdin.flush()
    ready, _, _ = select.select([sandbox.stdout], [], [], 180)
    answer = sandbox.stdout.readline() if ready else ""
    if not answer:
        close_sandboxes()
        raise RuntimeError(f"ifquery sandbox for {dialect} gave no answer")
    return [Query({name: [(key, value) for key, value in pairs]
                   for name, pairs in data["options"].items()}, data["refused"])
            for data in json.loads(answer)]


def close_sandboxes() -> None:
    while _SANDBOXES:
        _dialect, sandbox = _SANDBOXES.popitem()
        if sandbox.stdin is not None:
            sandbox.stdin.close()
        try:
            sandbox.wait(30)
        except subprocess.TimeoutExpired:
            sandbox.kill()
            sandbox.wait(10)


atexit.register(close_sandboxes)


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
        pairs: list[tuple[str, str]] = []
        for line in result.stdout.splitlines():
            key, colon, value = line.partition(": ")
            if not colon and pairs:  # a repeated option is one value, joined by a newline
                pairs[-1] = (pairs[-1][0], f"{pairs[-1][1]}\n{line}")
                continue
            pairs.append((key, value))
        options[name] = pairs
    return {"options": options, "refused": None}


_FORK_SERVER = """
import json, os, runpy, signal, sys, tempfile
sys.path.insert(0, sys.argv[1])
import importlib, pkgutil
import ifupdown2.addons, ifupdown2.ifupdown.client, ifupdown2.ifupdown.ifupdownmain
for module in pkgutil.iter_modules(ifupdown2.addons.__path__):
    try:
        importlib.import_module("ifupdown2.addons." + module.name)
    except Exception:
        pass
for line in sys.stdin:
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    pid = os.fork()
    if pid == 0:
        signal.alarm(60)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        sys.argv = ["ifquery", *json.loads(line)]
        code = 0
        try:
            runpy.run_module("ifupdown2.__main__", run_name="__main__")
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else 1
        except BaseException:
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    out.seek(0)
    err.seek(0)
    print(json.dumps([os.waitstatus_to_exitcode(status),
                      out.read().decode(errors="replace"), err.read().decode(errors="replace")]),
          flush=True)
"""
_ifupdown2_server: subprocess.Popen[str] | None = None


def _run_ifupdown2(arguments: list[str]) -> subprocess.CompletedProcess[str]:
    """ifupdown2's ifquery with `arguments`: a fork of one process that has imported
    ifupdown2 once (each query is still a fresh process: nothing carries over)."""
    global _ifupdown2_server
    if _ifupdown2_server is None:
        _ifupdown2_server = subprocess.Popen(
            [PYTHON, "-c", _FORK_SERVER, str(DIALECTS_DIR / "ifupdown2")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert _ifupdown2_server.stdin is not None and _ifupdown2_server.stdout is not None
    _ifupdown2_server.stdin.write(json.dumps(arguments) + "\n")
    _ifupdown2_server.stdin.flush()
    code, stdout, stderr = json.loads(_ifupdown2_server.stdout.readline())
    return subprocess.CompletedProcess(arguments, code, stdout, stderr)


def _ifupdown2(names: list[str]) -> dict[str, object]:
    wanted = list(names)
    while wanted:
        result = _run_ifupdown2(["-i", "/etc/network/interfaces", "-o", "json", *wanted])
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
    for request in sys.stdin:
        answers = []
        for root, names in json.loads(request):
            subprocess.run(["mount", "--bind", str(Path(root) / "etc/network"),
                            "/etc/network"], check=True, timeout=10)
            answers.append(reader(names))
            subprocess.run(["umount", "/etc/network"], check=True, timeout=10)
        print(json.dumps(answers), flush=True)
    if _ifupdown2_server is not None:
        assert _ifupdown2_server.stdin is not None
        _ifupdown2_server.stdin.close()
        _ifupdown2_server.wait(30)


if __name__ == "__main__":
    main(sys.argv[1])
