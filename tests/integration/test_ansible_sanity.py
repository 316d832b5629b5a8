"""`ansible-test sanity` passes on the collection (contrib/ansible/zsn/fleet), every
sanity test of the installed ansible-test run, none skipped.

ansible-test runs inside ``.../ansible_collections/NAMESPACE/NAME``, so the collection
is copied into such a tree. ``--local`` runs the tests with the Python that runs
ansible-test, but those with requirements of their own (ansible-doc, import, pep8,
pylint, runtime-metadata, validate-modules, yamllint) each get a virtualenv made
without pip, which ansible-test bootstraps with a script it downloads from
ci-files.testing.ansible.com (offline: "Download failed"). A script already at its
cache path, ``~/.ansible/test/cache/get_pip_<VERSION>.py``, is used as it is: ours
runs ensurepip, then installs what ansible-test asks for (its pinned pip, setuptools
and wheel) and its requirements from PyPI. ansible-test's home (the script, the
virtualenvs) is kept in `SANITY_HOME` between runs: the first run makes the
virtualenvs (some 3 minutes, mostly downloads), later ones reuse them (some 15 s).
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.needs import needs_tools, unavailable

REPO = Path(__file__).resolve().parents[2]
COLLECTION = REPO / "contrib" / "ansible" / "zsn" / "fleet"
SANITY_HOME = Path(os.environ.get("ZSN_ANSIBLE_TEST_HOME") or (
    "/var/cache/zsn-lab/ansible-test" if os.geteuid() == 0
    else Path.home() / ".cache" / "zsn-ansible-test"))
"""The HOME ansible-test runs with: its pip bootstrap script and its virtualenvs."""
GET_PIP = '''\
"""A stand-in for ansible-test's get-pip bootstrap script, written by zsn's tests
(tests/integration/test_ansible_sanity.py): pip from ensurepip, then the packages
ansible-test names (its pinned pip, setuptools, wheel) from PyPI."""
import ensurepip
import subprocess
import sys

ensurepip.bootstrap()
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", *sys.argv[1:]]))
'''
RAN = re.compile(r'^Running sanity test "([^"]+)"', re.MULTILINE)


def _python() -> tuple[str, str]:
    """(the interpreter that runs ansible-test, its X.Y)."""
    script = shutil.which("ansible-test")
    assert script is not None
    first = Path(script).read_text(errors="replace").splitlines()[0]
    interpreter = first.removeprefix("#!").strip().split()[0]
    version = subprocess.run([interpreter, "-c", "import sys; print('%d.%d' % sys.version_info"
                              "[:2])"], capture_output=True, text=True, check=True,
                             timeout=30).stdout.strip()
    return interpreter, version


def _pip_version(interpreter: str, version: str) -> str:
    """The pip ansible-test bootstraps into a virtualenv for Python `version` (the name
    of the script's cache file has it)."""
    asked = subprocess.run(
        [interpreter, "-c", "import types; from ansible_test._internal.python_requirements "
         "import get_venv_packages; print(get_venv_packages(types.SimpleNamespace("
         f"version={version!r}))['pip'])"], capture_output=True, text=True, timeout=60,
        check=False)
    if asked.returncode != 0:
        pytest.fail("this ansible-test does not say which pip it bootstraps "
                    f"(get_venv_packages): {asked.stderr.strip()[-500:]}")
    return asked.stdout.strip()


@pytest.mark.timeout(900)
def test_ansible_test_sanity_passes_on_the_collection(tmp_path: Path) -> None:
    needs_tools("ansible-test")
    interpreter, version = _python()
    if subprocess.run([interpreter, "-c", "import ensurepip"], capture_output=True,
                      timeout=30, check=False).returncode != 0:
        unavailable(f"{interpreter} has no ensurepip (Debian: apt install python3-venv)")
    tree = tmp_path / "ansible_collections" / "zsn" / "fleet"
    shutil.copytree(COLLECTION, tree, ignore=shutil.ignore_patterns("output", "__pycache__"))
    cache = SANITY_HOME / ".ansible" / "test" / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    script = cache / f"get_pip_{_pip_version(interpreter, version).replace('.', '_')}.py"
    if not script.exists() or script.read_text() != GET_PIP:
        script.write_text(GET_PIP)
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("ANSIBLE_", "PIP_"))}
    environment["HOME"] = str(SANITY_HOME)
    command = ["ansible-test", "sanity", "--local", "--python", version, "--color", "no"]
    listed = subprocess.run([*command, "--list-tests"], cwd=tree, env=environment,
                            capture_output=True, text=True, timeout=120, check=True)
    tests = re.findall(r"^([a-z0-9-]+)$", listed.stdout, re.MULTILINE)
    # Runs beside another checkout's share the virtualenvs: one at a time.
    with open(SANITY_HOME / "sanity.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        started = time.monotonic()
        result = subprocess.run(command, cwd=tree, env=environment, capture_output=True,
                                text=True, timeout=840, check=False)
        took = time.monotonic() - started
    said = result.stdout + result.stderr
    ran = RAN.findall(said)
    print(f"ansible-test sanity --local --python {version}: {len(ran)} of {len(tests)} "
          f"tests ran in {took:.0f} s")
    assert result.returncode == 0, said[-6000:]
    assert sorted(set(ran)) == sorted(tests), said[-6000:]
