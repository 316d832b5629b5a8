"""NetworkManager's keyfile folder as NetworkManager reads it: the files it takes for
profiles by name (libnm's nm_keyfile_utils_ignore_filename) and those it refuses to load
(nms_keyfile_utils_check_file_permissions). The keyfiles are NetworkManager's own test
files (tests/fixtures/corpus/eap/networkmanager, SOURCES.md), under the names and modes a
real folder shows."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.unit.wlan.conftest import make_root
from zsn.system.host import Host
from zsn.wlan import nm
from zsn.wlan.lint import lint_snapshot
from zsn.wlan.live import read_wlan

KEYFILES = Path(__file__).parents[2] / "fixtures" / "corpus" / "eap" / "networkmanager"
FOLDER = nm.KEYFILE_DIR


def _folder(tmp_path: Path) -> Path:
    """NetworkManager's test folder as a host's: one profile it loads, the CA beside it,
    a backup, a hidden copy and a temporary file of g_file_set_contents it passes over,
    and a profile it refuses, left readable by all."""
    root = make_root(tmp_path, netctl=False)
    folder = root / FOLDER.lstrip("/")
    folder.mkdir(parents=True)
    for source, name, mode in (
            ("Test_Wired_TLS_New", "Test_Wired_TLS_New", 0o600),
            ("test-ca-cert.pem", "test-ca-cert.pem", 0o600),
            ("Test_Wired_TLS_Path_Missing", "Test_Wired_TLS_Path_Missing~", 0o600),
            ("Test_Wired_TLS_Path_Missing", ".Test_Wired_TLS_Path_Missing", 0o600),
            ("Test_Wired_TLS_Path_Missing", "Test_Wired_TLS_Path_Missing.Q3xZ9a", 0o600),
            ("Test_Wired_TLS_Old", "Test_Wired_TLS_Old", 0o644)):
        shutil.copyfile(KEYFILES / source, folder / name)
        os.chmod(folder / name, mode)
    return root


def test_only_the_files_networkmanager_loads_are_its_profiles(tmp_path: Path) -> None:
    """Before, every file of the folder was read as a profile: the backup, the hidden
    copy, the temporary file and the one NetworkManager refuses each had a WLAN010
    finding, as if NetworkManager would use them."""
    host = Host(_folder(tmp_path))
    assert nm.keyfiles(host) == [
        nm.Keyfile(f"{FOLDER}/Test_Wired_TLS_New", None),
        nm.Keyfile(f"{FOLDER}/Test_Wired_TLS_Old",
                   "its permissions (0644) let group or others at it")]
    assert [path for path, _ssid, _profile in nm.keyfile_profiles(host)] == [
        f"{FOLDER}/Test_Wired_TLS_New"]
    findings = lint_snapshot(host, read_wlan(host))
    assert sorted((f.id, f.subject) for f in findings if f.id in ("WLAN010", "WLAN011")) == [
        ("WLAN010", f"{FOLDER}/Test_Wired_TLS_New"),
        ("WLAN011", f"{FOLDER}/Test_Wired_TLS_Old")]
    refused = next(f for f in findings if f.id == "WLAN011")
    assert refused.message == (f"NetworkManager does not load {FOLDER}/Test_Wired_TLS_Old: "
                               "its permissions (0644) let group or others at it")
    assert refused.fix_plan is not None
    plan = refused.fix_plan()
    plan.apply()
    assert os.stat(host.path(f"{FOLDER}/Test_Wired_TLS_Old")).st_mode & 0o777 == 0o600
    assert nm.keyfiles(host)[1].refused is None


@pytest.mark.parametrize(("name", "ignored"), [
    ("Test_Wired_TLS_New", False), ("eduroam.nmconnection", False),
    ("Wired connection 1", False), (".vim-file.swp", True), (".#emacs-locking", True),
    ("file-with-tilde~", True), (".file-with-dot", True), ("test-ca-cert.pem", True),
    ("client.DER", True), ("eduroam.nmconnection.ABCEDF", True), (".pem", True),
    ("x.nmmeta", True), ("bond0.backup", True), ("bond0.bak", False)])
def test_names_networkmanager_passes_over(name: str, ignored: bool) -> None:
    """libnm's own test table (test_nm_keyfile_plugin_utils_escape_filename) and the
    names a folder holds; a six-letter suffix reads as g_file_set_contents' temporary
    file, whatever it means to whoever named it."""
    assert nm.keyfile_name_ignored(name) is ignored
