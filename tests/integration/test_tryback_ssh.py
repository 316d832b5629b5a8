"""Lock-out scenarios over a real SSH session on this host (issue 19): zsn runs inside
the session (Debian's sshd in one namespace, ssh in another: tests/lab/sshd.py) and
makes a change that cuts it, with ``--try``; tests/lab/tryback.py has the checks.

Here: the uplink put into a bridge (reverse-path filtering strict, as on a host so
configured: Linux otherwise answers through the bridge), the same with ``--persist``
for netplan, systemd-networkd and ifupdown (the config is written only on confirm),
the path's MTU lowered, a WireGuard interface brought up with ``0.0.0.0/0`` while the
session comes over the default route, and the gateway turned on (IPv6 forwarding)
while the session's IPv6 default route was learned from router advertisements. Each
never confirmed (restored within SECONDS + 5 s) and confirmed (it stays). Also: zsn
killed (kill -9) right after applying, every process of the session killed, and a
rollback that meets a changed state. Bonds, VLANs and Wi-Fi need kernel modules this
host lacks: tests/kernel/test_tryback.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.lab import sshd
from tests.lab.netns import Lab, new_private_key, require_lab, run, stop_process, wait_for
from tests.lab.sshd import SshLab, kill_all, zsn_command
from tests.lab.tryback import (
    CONFIRM_WINDOW,
    Scenario,
    confirmed,
    never_confirmed,
    record_figure,
)
from tests.needs import needs_tools

pytestmark = pytest.mark.lab
SECONDS = 6
"""Each try's deadline: the sessions' keepalives give up well before it."""


@pytest.fixture(scope="module")
def ssh_lab() -> Iterator[SshLab]:
    with sshd.built(7) as built:
        yield built


@pytest.fixture
def fresh(ssh_lab: SshLab) -> Iterator[SshLab]:
    """The lab as built, whatever the last scenario left (and no change on record)."""
    before = ssh_lab.snapshot()
    yield ssh_lab
    ssh_lab.forget_changes()
    ssh_lab.target = (ssh_lab.server_ip, ssh_lab.client_alias)
    assert ssh_lab.snapshot() == before, "a scenario left the lab changed"


def _link(lab: SshLab, name: str) -> dict[str, object] | None:
    result = run(["ip", "-n", lab.server, "-j", "link", "show", name], check=False)
    return json.loads(result.stdout)[0] if result.returncode == 0 else None


# -- the uplink into a bridge ---------------------------------------------------------


def _strict_rp_filter(lab: SshLab) -> Callable[[], None]:
    """Linux answers through a bridge that holds the port unless reverse-path filtering
    is strict: with it, a packet that comes in by the bridge while its route back is
    the port is dropped (a host so configured is locked out by bridging its uplink)."""
    lab.sysctl("net.ipv4.conf.all.rp_filter", "1")
    return lambda: lab.sysctl("net.ipv4.conf.all.rp_filter", "0")


def _bridged(lab: SshLab) -> bool:
    link = _link(lab, lab.uplink)
    return link is not None and link.get("master") == "zbr7"


BRIDGE = Scenario(
    "uplink-into-bridge", ("link", "create", "bridge", "zbr7", "--ports", "UPLINK"),
    changed=_bridged, undo=lambda lab: run(["ip", "-n", lab.server, "link", "del", "zbr7"]),
    prepare=_strict_rp_filter)


# -- the same, persisted --------------------------------------------------------------

PERSISTED = {
    "netplan": ("/etc/netplan", "01-lab.yaml", 0o600, """\
        network:
          version: 2
          ethernets:
            {uplink}:
              addresses: [{address}/24]
        """),
    "networkd": ("/etc/systemd/network", "10-lab.network", 0o644, """\
        [Match]
        Name={uplink}

        [Network]
        Address={address}/24
        """),
    "ifupdown": ("/etc/network", "interfaces", 0o644, """\
        auto lo
        iface lo inet loopback

        auto {uplink}
        iface {uplink} inet static
            address {address}/24
        """),
}


def _persisted(backend: str) -> Callable[[SshLab], Callable[[], None]]:
    folder, name, mode, text = PERSISTED[backend]

    def prepare(lab: SshLab) -> Callable[[], None]:
        teardown = _strict_rp_filter(lab)
        path = lab.folder(folder) / name
        path.write_text(textwrap.dedent(text).format(uplink=lab.uplink,
                                                     address=lab.server_ip))
        path.chmod(mode)

        def cleanup() -> None:
            teardown()
            for leftover in lab.folder(folder).iterdir():
                run(["rm", "-rf", str(leftover)])

        return cleanup

    return prepare


def _bridge_persisted(backend: str) -> Callable[[SshLab], bool]:
    folder = PERSISTED[backend][0]

    def kept(lab: SshLab) -> bool:
        return any("zbr7" in path.read_text() for path in lab.folder(folder).rglob("*")
                   if path.is_file() and not path.name.endswith(".zsn-bak"))

    return kept


PERSIST = [replace(BRIDGE, name=f"uplink-into-bridge-persist-{backend}",
                   argv=(*BRIDGE.argv, "--persist"), prepare=_persisted(backend),
                   files=(PERSISTED[backend][0],))
           for backend in PERSISTED]


# -- the path's MTU ---------------------------------------------------------------------


def _mtu(lab: SshLab) -> int | None:
    link = _link(lab, lab.uplink)
    return int(str(link["mtu"])) if link else None


MTU = Scenario("path-mtu-lowered", ("link", "set", "UPLINK", "--mtu", "1000"),
               changed=lambda lab: _mtu(lab) == 1000,
               undo=lambda lab: run(["ip", "-n", lab.server, "link", "set", lab.uplink,
                                     "mtu", "1500"]), bulk=True, size=1400)


# -- WireGuard with 0.0.0.0/0 ----------------------------------------------------------


def _wg_name(lab: SshLab) -> str:
    return lab.lab.name("wg")


def _public_key() -> str:
    from zsn.wireguard.keys import public_key_from_private

    return public_key_from_private(new_private_key())


def _by_default_route(lab: SshLab) -> Callable[[], None]:
    """The session comes over the server's default route instead of a gateway route."""
    net = lab.client_alias.rsplit(".", 1)[0] + ".0/24"
    run(["ip", "-n", lab.server, "route", "del", net])
    run(["ip", "-n", lab.server, "route", "add", "default", "via", lab.client_ip])

    def teardown() -> None:
        run(["ip", "-n", lab.server, "route", "del", "default"])
        run(["ip", "-n", lab.server, "route", "add", net, "via", lab.client_ip])

    return teardown


def _wg_config(lab: SshLab, name: str, interface: list[str], peer: list[str]) -> Path:
    config = lab.folder("/etc/wireguard") / f"{name}.conf"
    config.write_text("\n".join(["[Interface]", *interface, f"PrivateKey = {new_private_key()}",
                                 "", "[Peer]", f"PublicKey = {_public_key()}", *peer, ""]))
    config.chmod(0o600)
    return config


def _full_tunnel(lab: SshLab) -> Callable[[], None]:
    """A WireGuard config whose one peer takes 0.0.0.0/0: wg-quick routes everything
    without its fwmark into the tunnel (a default route in its own table), replies to
    a session that came over the default route included."""
    teardown = _by_default_route(lab)
    config = _wg_config(lab, _wg_name(lab), ["Address = 10.99.7.1/24"],
                        ["AllowedIPs = 0.0.0.0/0", f"Endpoint = {lab.client_ip}:51820"])

    def cleanup() -> None:
        config.unlink()
        teardown()

    return cleanup


WIREGUARD = Scenario(
    "wireguard-full-tunnel", ("wg", "up", "WG"),
    changed=lambda lab: _link(lab, _wg_name(lab)) is not None,
    undo=lambda lab: lab.in_server(["wg-quick", "down", _wg_name(lab)]),
    prepare=_full_tunnel, files=("/etc/wireguard",),
    names=lambda lab: {"WG": _wg_name(lab)})


# -- the gateway: IPv6 forwarding drops the learned default route ---------------------


def _six(lab: SshLab) -> tuple[str, str, str]:
    """(the advertised prefix, the client's router address, the session's source)."""
    return "2001:db8:7::", "2001:db8:7::2", "2001:db8:77::2"


def _learned_default(lab: SshLab) -> bool:
    routes = json.loads(run(["ip", "-n", lab.server, "-6", "-j", "route", "show",
                             "default"]).stdout)
    return any(route.get("protocol") == "ra" for route in routes)


def _slaac_address(lab: SshLab) -> str | None:
    data = json.loads(run(["ip", "-n", lab.server, "-6", "-j", "addr", "show", "dev",
                           lab.uplink, "scope", "global"]).stdout)
    found = [info["local"] for item in data for info in item["addr_info"] if "local" in info]
    return found[0] if found else None


def _advertised(lab: SshLab) -> Callable[[], None]:
    """The client's namespace is an IPv6 router (radvd) for the server's uplink, which
    takes its address and default route from the advertisements; the session comes
    over IPv6 from an address behind that router."""
    needs_tools("radvd")
    prefix, router, source = _six(lab)
    client = ["ip", "-n", lab.client]
    run([*client, "addr", "add", f"{router}/64", "dev", lab.far, "nodad"])
    run([*client, "addr", "add", f"{source}/128", "dev", "lo", "nodad"])
    run(["ip", "netns", "exec", lab.client, "sysctl", "-q", "-w",
         "net.ipv6.conf.all.forwarding=1"])
    lab.sysctl(f"net.ipv6.conf.{lab.uplink}.accept_dad", "0")
    config = lab.work / "radvd.conf"
    config.write_text(textwrap.dedent(f"""\
        interface {lab.far} {{
            AdvSendAdvert on;
            MinRtrAdvInterval 3;
            MaxRtrAdvInterval 4;
            AdvDefaultLifetime 60;
            prefix {prefix}/64 {{ AdvOnLink on; AdvAutonomous on; }};
        }};
        """))
    radvd = subprocess.Popen(
        ["ip", "netns", "exec", lab.client, "radvd", "-n", "-C", str(config), "-p",
         str(lab.work / "radvd.pid"), "-m", "stderr"], stderr=subprocess.DEVNULL)
    wait_for(lambda: _learned_default(lab) and _slaac_address(lab) is not None, 30,
             "the server to take the advertised prefix and default route")
    address = _slaac_address(lab)
    assert address is not None
    lab.target = (address, source)
    wg = _wg_config(lab, lab.lab.name("gw"), ["Address = 10.98.7.1/24, fd00:98:7::1/64"],
                    ["AllowedIPs = 10.98.7.2/32, fd00:98:7::2/128"])

    def teardown() -> None:
        wg.unlink()
        for leftover in lab.folder("/etc/wireguard").glob("*.zsn-bak"):
            leftover.unlink()
        stop_process(radvd)
        lab.target = (lab.server_ip, lab.client_alias)
        run([*client, "addr", "del", f"{router}/64", "dev", lab.far])
        run([*client, "addr", "del", f"{source}/128", "dev", "lo"])
        run(["ip", "netns", "exec", lab.client, "sysctl", "-q", "-w",
             "net.ipv6.conf.all.forwarding=0"])
        lab.sysctl("net.ipv6.conf.all.forwarding", "0")
        run(["ip", "-n", lab.server, "-6", "addr", "flush", "dev", lab.uplink, "scope",
             "global"])
        run(["ip", "-n", lab.server, "-6", "route", "flush", "proto", "ra"])
        run(["ip", "-n", lab.server, "-6", "route", "del", f"{prefix}/64", "dev", lab.uplink],
            check=False)  # the advertised on-link prefix
        lab.sysctl("net.ipv4.ip_forward", "0")

    return teardown


def _forwarding(lab: SshLab) -> bool:
    return run(["ip", "netns", "exec", lab.server, "sysctl", "-n",
                "net.ipv6.conf.all.forwarding"]).stdout.strip() == "1"


def _gateway_undo(lab: SshLab) -> None:
    lab.sysctl("net.ipv6.conf.all.forwarding", "0")
    lab.sysctl("net.ipv4.ip_forward", "0")
    wait_for(lambda: _learned_default(lab), 30, "the next advertisement")


GATEWAY = Scenario(
    "gateway-ipv6-forwarding", ("wg", "gateway", "GW", "--egress", "UPLINK"),
    changed=_forwarding, undo=_gateway_undo, prepare=_advertised,
    files=("/etc/wireguard",),
    names=lambda lab: {"GW": lab.lab.name("gw"), "UPLINK": lab.uplink})


SCENARIOS = [BRIDGE, *PERSIST, MTU, WIREGUARD, GATEWAY]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_never_confirmed_the_guardian_restores_the_path(
        fresh: SshLab, scenario: Scenario, request: pytest.FixtureRequest) -> None:
    record_figure(request, scenario.name, never_confirmed(fresh, scenario, SECONDS))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_confirmed_the_change_stays(fresh: SshLab, scenario: Scenario) -> None:
    persisted = scenario.name.rpartition("-")[2] if scenario in PERSIST else None
    confirmed(fresh, scenario, past_deadline=SECONDS if scenario is BRIDGE else None,
              kept=_bridge_persisted(persisted) if persisted else None)


# -- zsn killed, the session killed, a state that changed meanwhile --------------------


RECORD_RENAMES = 3
"""The change's record is written (renamed into place) when it is made, when it is
pending, and once the change is applied: a kill on entry to the third rename is a
kill right after the change was applied, before zsn says anything."""


def test_zsn_killed_right_after_applying(fresh: SshLab) -> None:
    """kill -9 of zsn right after it applied the change (strace kills it on entry to
    the rename that would record it applied): it never prints its confirm line, the
    guardian rolls back all the same."""
    needs_tools("strace")
    lab = fresh
    teardown = _strict_rp_filter(lab)
    try:
        kill = ("strace", "-qq", "-o", "/dev/null", "-e", "trace=rename,renameat,renameat2",
                "-e", f"inject=rename,renameat,renameat2:signal=KILL:when={RECORD_RENAMES}")
        session = lab.session(zsn_command(*BRIDGE.argv_for(lab), "--try", str(SECONDS),
                                          wrapper=kill))
        try:
            wait_for(lambda: _bridged(lab), 30, "the bridge")
            change = lab.change()
            done = lab.wait_state(("rolled back", "rollback incomplete"), SECONDS + 20)
            assert done["state"] == "rolled back", done["outcome"]
            assert not done["applied"]  # zsn never recorded it: it was killed first
        finally:
            out, _err = session.close()
        assert "ZSN-EXIT=137" in out and "zsn confirm" not in out
        assert change["state"] in ("arming", "pending")
        assert not _bridged(lab)
        wait_for(lab.probe, 10, "the path")
    finally:
        teardown()


def test_every_process_of_the_session_killed(fresh: SshLab) -> None:
    """What logind's KillUserProcesses or ``loginctl terminate-session`` does to a
    session: all its processes killed. The guardian is not one of them."""
    lab = fresh
    teardown = _strict_rp_filter(lab)
    try:
        session = lab.session(zsn_command(*BRIDGE.argv_for(lab), "--try", str(SECONDS)))
        try:
            change = lab.change()
            wait_for(lambda: _bridged(lab), 30, "the bridge")
            lab.wait_state(("pending",), 30)
            killed = lab.session_processes()
            assert killed
            kill_all(killed)
            # SIGKILL is sent at once, but a loaded machine takes a moment to end and
            # reap each process: what counts is that they all go, the guardian staying.
            wait_for(lambda: lab.session_processes() == [], 30,
                     "every process of the session to end")
            done = lab.wait_state(("rolled back", "rollback incomplete"), SECONDS + 20)
            assert done["state"] == "rolled back", done["outcome"]
            assert done["id"] == change["id"]
        finally:
            session.close()
        wait_for(lab.probe, 10, "the path")
    finally:
        teardown()


def test_a_rollback_that_meets_a_changed_state_says_what_is_left(fresh: SshLab) -> None:
    """During the try, one of the bridge's ports is deleted by hand: the rollback puts
    the uplink back (the path returns) and reports the port it cannot make again, with
    the commands that would."""
    lab = fresh
    teardown = _strict_rp_filter(lab)
    spare = lab.lab.name("sp")
    run(["ip", "-n", lab.server, "link", "add", spare, "type", "veth", "peer", "name",
         lab.lab.name("sq")])
    try:
        session = lab.session(zsn_command("link", "create", "bridge", "zbr7", "--ports",
                                          f"{lab.uplink},{spare}", "--try", str(SECONDS)))
        try:
            # zsn has applied the change and noted the state it left (what a rollback
            # compares with): on a busy machine the bridge shows before that note
            wait_for(lambda: _bridged(lab) and lab.applied(), 30, "the bridge, applied")
            run(["ip", "-n", lab.server, "link", "del", spare])
            done = lab.wait_state(("rolled back", "rollback incomplete"), SECONDS + 20)
        finally:
            session.close()
        assert done["state"] == "rollback incomplete"
        outcome = done["outcome"]
        assert f"link {spare} was deleted since the try: left as it is (zsn rollback " \
               f"{done['id']} --force restores it)" in outcome["left"]
        wait_for(lab.probe, 10, "the path, restored all the same")
        assert not _bridged(lab) and _link(lab, "zbr7") is None
        listed = lab.zsn("pending", "--all").stdout
        assert "rollback incomplete at" in listed
        assert f"NOT restored: link {spare} was deleted since the try" in listed
        forced = lab.zsn("rollback", str(done["id"]), "--force")
        assert forced.returncode == 1  # forced, it is still a veth zsn cannot make
        assert f"{spare} (veth) is gone and zsn cannot make one again" in forced.stdout
    finally:
        teardown()


def test_a_try_owns_its_link_and_a_later_change_is_not_undone(fresh: SshLab) -> None:
    """Issue 34: while ``link set UPLINK --mtu 1450 --try`` is pending, another change of
    the link is refused naming the try, ``--confirm-ssh-link`` or not; one made anyway
    by another tool (``ip``) is left alone by the guardian's rollback, which says so,
    and ``zsn rollback ID --force`` restores the link all the same."""
    lab = fresh
    tried = lab.zsn("link", "set", lab.uplink, "--mtu", "1450", "--try", str(CONFIRM_WINDOW))
    assert tried.returncode == 0, tried.stderr
    change = lab.change()
    change_id, title = change["id"], change["title"]
    again = lab.zsn("link", "set", lab.uplink, "--mtu", "1460", "--confirm-ssh-link",
                    lab.uplink)
    assert again.returncode == 2
    assert again.stderr == (
        f"zsn link: invalid: link {lab.uplink} belongs to change {change_id} ({title}), "
        f"still being tried: keep it (zsn confirm {change_id}) or roll it back (zsn rollback "
        f"{change_id}) first\n")
    assert _mtu(lab) == 1450
    run(["ip", "-n", lab.server, "link", "set", lab.uplink, "mtu", "1460"])  # another tool
    guardian = lab.folder("/run/zsn") / "changes" / str(change_id) / "guardian"
    os.kill(int(guardian.read_text()), signal.SIGTERM)  # its rollback now, not in 300 s
    done = lab.wait_state(("rolled back", "rollback incomplete"), 30)
    assert done["outcome"]["by"] == "the guardian, stopped by SIGTERM before the deadline"
    assert done["outcome"]["left"] == [
        f"link {lab.uplink} mtu changed since the try (was 1450, now 1460): left as it is "
        f"(zsn rollback {change_id} --force restores it)"]
    assert done["state"] == "rollback incomplete" and _mtu(lab) == 1460
    listed = lab.zsn("pending", "--all").stdout
    assert f"{change_id}  {title}  rollback incomplete at " in listed
    assert f"NOT restored: link {lab.uplink} mtu changed since the try" in listed
    forced = lab.zsn("rollback", str(change_id), "--force")
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert _mtu(lab) == 1500


def test_the_session_and_its_path_are_found_even_without_ssh_connection(
        fresh: SshLab) -> None:
    """A change to the session's path is refused unless tried or confirmed; zsn finds
    the path from SSH_CONNECTION, and from the sshd it runs under when sudo (or an
    admin) dropped it."""
    lab = fresh
    path = (f"this SSH session (from {lab.client_alias} to {lab.server_ip}, via "
            f"{lab.client_ip} dev {lab.uplink}) runs over {lab.uplink}; it changes "
            f"{lab.uplink}, which could cut the session off. Try it (--try SECONDS")
    change = zsn_command("link", "set", lab.uplink, "--mtu", "1400")
    for shell in (change, f"unset SSH_CONNECTION; {change}"):
        refused = lab.run(shell)
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr == f"zsn link: invalid: {path}: rolled back by itself unless " \
                                 f"confirmed) or confirm with --confirm-ssh-link " \
                                 f"{lab.uplink}\n"
    assert _mtu(lab) == 1500
    dry = lab.run(f"unset SSH_CONNECTION; {change} --dry-run --try 30")
    assert f"warning: this SSH session (from {lab.client_alias}" in dry.stdout
    assert "Tried for 30 s: unless confirmed in time (zsn confirm ID), a guardian puts " \
           "back:" in dry.stdout
    assert f"  - links: {lab.uplink} as they were (master, MTU, up/down, addresses); " \
           "their 1 route" in dry.stdout


def test_a_session_over_wireguard_names_the_tunnel_and_its_underlay(fresh: SshLab) -> None:
    """The session comes through a WireGuard tunnel (wireguard-go on both ends): its path
    is the tunnel's interface and, below it, the link its peer's packets leave by."""
    lab = fresh
    server_wg, client_wg = lab.lab.name("ws"), lab.lab.name("wc")
    keys = {side: new_private_key() for side in ("server", "client")}
    from zsn.wireguard.keys import public_key_from_private

    public = {side: public_key_from_private(key) for side, key in keys.items()}
    for side, ns, ifname in (("server", lab.server, server_wg),
                             ("client", lab.client, client_wg)):
        lab.lab.wireguard_go(ns, ifname)
        key_file = lab.work / f"{side}.key"
        key_file.write_text(keys[side] + "\n")
        key_file.chmod(0o600)
    run(["ip", "netns", "exec", lab.server, "wg", "set", server_wg, "private-key",
         str(lab.work / "server.key"), "listen-port", "51871", "peer", public["client"],
         "allowed-ips", "10.66.7.2/32"])
    run(["ip", "netns", "exec", lab.client, "wg", "set", client_wg, "private-key",
         str(lab.work / "client.key"), "peer", public["server"], "endpoint",
         f"{lab.server_ip}:51871", "allowed-ips", "10.66.7.0/24",
         "persistent-keepalive", "1"])
    for ns, ifname, address in ((lab.server, server_wg, "10.66.7.1/24"),
                                (lab.client, client_wg, "10.66.7.2/24")):
        run(["ip", "-n", ns, "addr", "add", address, "dev", ifname])
        run(["ip", "-n", ns, "link", "set", ifname, "up"])
    config = _wg_config(lab, server_wg, ["Address = 10.66.7.1/24", "ListenPort = 51871"],
                        ["AllowedIPs = 10.66.7.2/32"])
    lab.target = ("10.66.7.1", "10.66.7.2")
    try:
        wait_for(lab.probe, 30, "the path through the tunnel")
        refused = lab.run(zsn_command("wg", "down", server_wg))
        assert refused.returncode == 2, refused.stderr
        assert (f"this SSH session (from 10.66.7.2 to 10.66.7.1, dev {server_wg}) runs over "
                f"{server_wg}, {lab.uplink} (underlay of {server_wg} (peer endpoint "
                f"{lab.client_ip})); it changes {server_wg}" in refused.stderr)
        underlay = lab.run(zsn_command("link", "set", lab.uplink, "--mtu", "1400"))
        assert underlay.returncode == 2 and f"it changes {lab.uplink}" in underlay.stderr
    finally:
        lab.target = (lab.server_ip, lab.client_alias)
        config.unlink()
        lab.lab.stop_daemon(server_wg)
        lab.lab.stop_daemon(client_wg)


# -- the lab itself ---------------------------------------------------------------------


def test_a_refused_login_fails_the_lab_as_it_is_built() -> None:
    """sshd without PAM refuses a locked account (shadow ``!``), as every account is in
    the kernel lab guest: the lab says so at once, with sshd's reason, instead of each
    scenario waiting out its deadlines (the lab's own shadow keeps root unlocked)."""
    require_lab(("ip", "ping"))
    lab = Lab()
    started = time.monotonic()
    try:
        with pytest.raises(sshd.LoginRefused) as refused:
            sshd.build(lab, 8, shadow="root:!:::::::\n")
    finally:
        lab.close()
    assert time.monotonic() - started < 30
    assert "Permission denied (publickey" in str(refused.value)
    assert "User root not allowed because account is locked" in str(refused.value)


def test_the_lab_shadow_unlocks_every_account_and_holds_no_password() -> None:
    passwd = "root:x:0:0:root:/root:/bin/bash\nsshd:x:102:65534::/run/sshd:/usr/sbin/nologin\n"
    assert sshd.unlocked_shadow(passwd) == "root:*:::::::\nsshd:*:::::::\n"


def test_a_session_closed_twice_says_the_same_both_times(fresh: SshLab) -> None:
    session = fresh.session("echo hello; exit 3")
    wait_for(session.ended, 30, "the session to end")
    said = session.close()
    assert said == ("hello\n", "")
    assert session.close() == said  # the second time, no "read of closed file"
