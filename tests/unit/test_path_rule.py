"""One rule for paths: under --root every read, listing, write and socket resolves
inside the root as a chroot would (absolute link targets taken relative to it, ``..``
stopping at it), or is refused naming the link; files that are not files are refused
at once. Hostile trees are built here: links in and out, loops, FIFOs."""

from __future__ import annotations

import os
import re
import socket
import threading
import time
from pathlib import Path

import pytest

from zsn.errors import UnsafeStateError, ZsnError
from zsn.system import files, wireless
from zsn.system.host import MAX_LINK_HOPS, Host

PACKAGE = Path(__file__).resolve().parents[2] / "zsn"
SECRET = "root:$6$hash-of-the-outside-world:19000:0:99999:7:::\n"


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Host, Path]:
    """A root, and beside it a file that stands for the host's /etc/shadow."""
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    outside = tmp_path / "shadow"
    outside.write_text(SECRET)
    return Host(root), outside


def test_an_absolute_link_is_taken_relative_to_the_root(tree: tuple[Host, Path]) -> None:
    host, outside = tree
    host.path("/etc/shadow").write_text("in the tree\n")
    host.path("/etc/config").symlink_to(outside)  # the host's path: not there in a chroot
    host.path("/etc/alias").symlink_to("/etc/shadow")
    assert files.read_text(host.path("/etc/alias")) == "in the tree\n"
    with pytest.raises(ZsnError, match="/etc/config: a symbolic link to .*not in the tree"):
        files.read_text(host.path("/etc/config"))
    assert host.resolve("/etc/alias") == host.path("/etc/shadow")


def test_dot_dot_stops_at_the_root(tree: tuple[Host, Path]) -> None:
    host, outside = tree
    (host.root / "shadow").write_text("the tree's own\n")
    host.path("/etc/up").symlink_to("../../../../../../../shadow")
    assert files.read_text(host.path("/etc/up")) == "the tree's own\n"
    assert files.read_text(host.path("/etc/../../../shadow")) == "the tree's own\n"


def test_a_linked_folder_is_listed_inside_the_root(tree: tuple[Host, Path]) -> None:
    host, outside = tree
    (outside.parent / "d").mkdir()
    (outside.parent / "d" / "from-outside.conf").write_text(SECRET)
    host.path("/etc/d").symlink_to(outside.parent / "d")
    assert files.list_files(host.path("/etc/d")) == []
    host.path("/srv/d").mkdir(parents=True)
    host.path("/srv/d/in.conf").write_text("x\n")
    host.path("/etc/e").symlink_to("/srv/d")
    assert files.list_files(host.path("/etc/e")) == [host.path("/etc/e/in.conf")]
    assert not files.exists(host.path("/etc/d/from-outside.conf"))


def test_a_loop_is_refused_naming_the_link(tree: tuple[Host, Path]) -> None:
    host, _ = tree
    host.path("/etc/a").symlink_to("/etc/b")
    host.path("/etc/b").symlink_to("a")
    with pytest.raises(ZsnError, match=rf"/etc/[ab]: more than {MAX_LINK_HOPS} symbolic links"):
        files.read_text(host.path("/etc/a"))


def test_a_write_through_a_link_stays_inside(tree: tuple[Host, Path]) -> None:
    host, outside = tree
    host.path("/etc/netplan").mkdir()
    link = host.path("/etc/netplan/01.yaml")
    link.symlink_to(outside)  # dangling inside the root
    with pytest.raises(ZsnError, match="symbolic link"):
        files.write_atomic(link, "network: {}\n", previous=None)
    host.path("/srv").mkdir()
    host.path("/srv/01.yaml").write_text("old\n")
    link.unlink()
    link.symlink_to("/srv/01.yaml")
    files.write_atomic(link, "new\n", previous=files.read_tracked(link))
    assert host.path("/srv/01.yaml").read_text() == "new\n" and link.is_symlink()
    assert outside.read_text() == SECRET


def test_a_linked_parent_folder_cannot_carry_a_write_out(tree: tuple[Host, Path]) -> None:
    host, outside = tree
    host.path("/etc/wireguard").symlink_to(outside.parent)
    target = host.path("/etc/wireguard/shadow")
    with pytest.raises(ZsnError):
        files.write_atomic(target, "x\n", previous=None)
    files.ensure_private_dir(host.path("/etc/wireguard/keys"))
    assert (host.root / outside.parent.relative_to("/") / "keys").is_dir()
    assert not (outside.parent / "keys").exists() and outside.read_text() == SECRET
    with pytest.raises(UnsafeStateError, match="/etc/wireguard: is a symbolic link"):
        files.ensure_private_dir(host.path("/etc/wireguard/clients"))  # zsn's own state


def test_a_socket_link_is_never_followed_out() -> None:
    import shutil
    import tempfile

    from zsn.errors import SocketError
    from zsn.wireguard import uapi

    short = Path(tempfile.mkdtemp(prefix="zp", dir="/tmp"))  # unix socket paths are short
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    served = short / "host.sock"
    server.bind(str(served))
    server.listen(1)
    try:
        host = Host(short / "r")
        host.path("/run/wireguard").mkdir(parents=True)
        host.path("/run/wireguard/wg0.sock").symlink_to(served)
        with pytest.raises(SocketError, match="gone"):
            uapi.get_device(host.path("/run/wireguard/wg0.sock"), timeout=1)
        server.settimeout(0.1)
        with pytest.raises(TimeoutError):
            server.accept()  # nothing came through the link
    finally:
        server.close()
        shutil.rmtree(short)


@pytest.mark.parametrize("what", ["fifo", "device"])
def test_a_sysfs_file_that_is_no_file_is_refused_at_once(tree: tuple[Host, Path],
                                                        what: str) -> None:
    host, _ = tree
    base = host.path("/sys/class/net/wlan0")
    (base / "phy80211").mkdir(parents=True)
    attribute = base / "phy80211" / "name"
    if what == "fifo":
        os.mkfifo(attribute)  # no writer: a reader that opened it waits forever
        os.mkfifo(base / "address")
    else:
        attribute.symlink_to("/dev/zero")  # inside the root: dangling
        os.symlink("/dev/zero", base / "address")  # same
    answers: list[object] = []
    reader = threading.Thread(target=lambda: answers.extend(
        [wireless.phy_of(host, "wlan0"), wireless.mac_of(host, "wlan0")]), daemon=True)
    started = time.monotonic()
    reader.start()
    reader.join(5)
    assert answers == [None, None], "the read of a FIFO did not come back"
    assert time.monotonic() - started < 1
    if what == "fifo":
        with pytest.raises(ZsnError, match="not a regular file"):
            files.read_text(attribute)


# Only these touch the file system other than through zsn.system.files: each says why.
ALLOWED = {
    "zsn/system/files.py": "the path rule's reads and writes",
    "zsn/system/host.py": "the path rule itself",
    "zsn/system/own_state.py": "the state rule: it looks at each part of a path (lstat)",
    "zsn/tui/themes.py": "zsn's own theme files and the user's ~/.config, not a tree",
    "zsn/tui/app.py": "zsn's own style sheets",
    "zsn/openvpn/actions.py:resources": "zsn's own DNS hook, from its package",
    "zsn/eap/certs.py": "certificate and key files the user names for an 802.1X profile",
    "zsn/eap/request.py": "a password or passphrase file the user names (process "
                          "substitution welcome)",
    "zsn/system/wpa_ctrl.py:tempdir": "zsn's own private folder for its reply socket",
    "zsn/system/namespaces.py": "the live system's namespace identities (no --root)",
    "zsn/exporter/webconfig.py": "the exporter's web config and TLS files, named by the admin on "
                        "its command line (not the tree), and zsn's own temporary folder",
    "zsn/zfs/receiver.py": "runs on the target as a script of its own (no zsn there): "
                           "its files are the target's; and its own source, sent there",
    "zsn/wireguard/history.py": "SQLite's own file, where `store_path` resolved it inside "
                                "the root (a link in its place refused)",
}
FROM_MARKER = {
    "zsn/system/networkd_sandbox.py": ("# -- inside the namespaces",
                                       "networkd's private mounts, in its own namespace"),
}
_RAW = re.compile(
    r"\.(exists|is_dir|is_file|is_symlink|iterdir|read_text|read_bytes|lstat|stat|rglob)\(\)"
    r"|\.(glob|rglob|write_text|write_bytes|mkdir|symlink_to|chmod|unlink|touch|rmdir|"
    r"hardlink_to)\("
    r"|\bos\.(stat|lstat|scandir|listdir|open|readlink|symlink|replace|rename|unlink|remove|"
    r"chmod|makedirs|mkdir|access|walk)\("
    r"|\bos\.path\.(exists|lexists|isfile|isdir|islink|realpath|getsize)\("
    r"|(?<![\w.])(?<!def )open\(|\bshutil\.(copy\w*|rmtree|move)\(")


def _allowed(relative: str, line: str) -> bool:
    if relative in ALLOWED or "confine(" in line:  # resolved by the rule already
        return True
    if "os.devnull" in line:  # the null device as a sink, zsn's own, never the tree's
        return True
    if "os.X_OK" in line:  # a program zsn runs, looked up as shutil.which does
        return True
    if relative == "zsn/openvpn/actions.py" and "resources.files" in line:
        return True
    return relative == "zsn/system/wpa_ctrl.py" and "self._dir" in line


def test_every_file_access_goes_through_the_path_rule() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = str(path.relative_to(PACKAGE.parent))
        lines = path.read_text().splitlines()
        marker = FROM_MARKER.get(relative, ("", ""))[0]
        last = next((i for i, line in enumerate(lines) if marker and line.startswith(marker)),
                    len(lines))
        for number, line in enumerate(lines[:last], start=1):
            code = line.split("#", 1)[0]
            if _RAW.search(code) and not _allowed(relative, code):
                found.append(f"{relative}:{number}: {line.strip()}")
    assert found == [], "use zsn.system.files (the path rule):\n" + "\n".join(found)


def test_a_stamp_looks_inside_the_root_only(tree: tuple[Host, Path]) -> None:
    host, outside = tree
    (outside.parent / "d").mkdir()
    (outside.parent / "d" / "from-outside.conf").write_text(SECRET)
    host.path("/etc/wireguard").symlink_to(outside.parent / "d")  # the host's path
    assert files.stamp(host.path("/etc/wireguard")) == ()
    host.path("/srv/wg").mkdir(parents=True)
    host.path("/srv/wg/wg0.conf").write_text("[Interface]\n")
    host.path("/etc/wireguard").unlink()
    host.path("/etc/wireguard").symlink_to("/srv/wg")
    assert [Path(entry[0]).name for entry in files.stamp(host.path("/etc/wireguard"))] == [
        "wg", "wg0.conf"]
