"""Which network namespace zsn runs in (issue 9, item 9), told from the namespace files'
device and inode: forwarding in one that boot settings do not reach is set live only
(`tests/unit/test_wireguard_actions.py`)."""

from __future__ import annotations

import os
from pathlib import Path

from zsn.system.host import Host
from zsn.system.namespaces import other_network_namespace

LIVE = Host(Path("/"))


def _namespace_files(tmp_path: Path) -> tuple[Path, Path]:
    """A fake /proc and /run/netns: namespace files are compared by device and inode."""
    proc, named = tmp_path / "proc", tmp_path / "run/netns"
    (proc / "self/ns").mkdir(parents=True)
    (proc / "1/ns").mkdir(parents=True)
    named.mkdir(parents=True)
    (proc / "self/ns/net").write_text("")
    return proc, named


def test_a_named_namespace_is_not_the_one_boot_settings_reach(tmp_path: Path) -> None:
    proc, named = _namespace_files(tmp_path)
    (named / "other").write_text("")
    os.link(proc / "self/ns/net", named / "lab1")  # `ip netns exec lab1`: the same inode
    reason = other_network_namespace(LIVE, proc, named)
    assert reason == "zsn runs in the network namespace 'lab1' (ip netns)"


def test_a_namespace_other_than_pid_1s_is_not_either(tmp_path: Path) -> None:
    proc, named = _namespace_files(tmp_path)
    (proc / "1/ns/net").write_text("")  # another inode: `unshare -n`
    assert other_network_namespace(LIVE, proc, named) == \
        "zsn runs in a network namespace other than PID 1's"


def test_pid_1s_namespace_is_the_one_and_so_is_a_container_or_the_unknown(
        tmp_path: Path) -> None:
    proc, named = _namespace_files(tmp_path)
    assert other_network_namespace(LIVE, proc, named) is None, "PID 1's not readable"
    os.link(proc / "self/ns/net", proc / "1/ns/net")  # the host, or a container's own init
    assert other_network_namespace(LIVE, proc, named) is None
    (proc / "1/ns/net").unlink()
    (proc / "1/ns/net").write_text("")
    assert other_network_namespace(Host(tmp_path), proc, named) is None, \
        "under --root there is no running namespace: the tree's files are the point"
