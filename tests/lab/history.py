"""A WireGuard server and its clients for the history tests, and zsn run on it.

The server (wireguard-go) lives in a namespace of its own, each client in another,
joined by veth pairs. zsn runs inside the server's namespace (so the device is
this namespace's, as on a real server) with the lab's folders bind-mounted over
``/etc/wireguard`` and ``/var/lib`` in a private mount namespace: its history
store and any config it edits (an expiry) are the test's, never the machine's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.lab.mounts import private_argv
from tests.lab.netns import Lab, new_private_key, run, wait_for
from zsn.wireguard import uapi
from zsn.wireguard.keys import base64_to_hex, public_key_from_private

REPO = Path(__file__).resolve().parents[2]
SERVER_PORT = 51940


@dataclass
class Client:
    name: str
    namespace: str
    ifname: str
    private_key: str
    public_key: str
    tunnel_ip: str
    socket: Path


@dataclass
class HistoryLab:
    lab: Lab
    folder: Path
    """Holds ``etc/`` (bound over /etc/wireguard) and ``var/lib`` (over /var/lib)."""
    server_ns: str = ""
    server_if: str = ""
    server_key: str = ""
    server_socket: Path = Path()
    clients: dict[str, Client] = field(default_factory=dict)

    @property
    def config(self) -> Path:
        return self.folder / "etc" / f"{self.server_if}.conf"

    def start_server(self) -> None:
        if not self.server_ns:
            self.server_ns = self.lab.namespace("hs")
            self.server_if = self.lab.name("hs")
            self.server_key = new_private_key()
            (self.folder / "etc").mkdir(parents=True, mode=0o700)
            (self.folder / "var/lib").mkdir(parents=True)
        self.server_socket = self.lab.wireguard_go(self.server_ns, self.server_if)
        lines = [f"private_key={base64_to_hex(self.server_key)}",
                 f"listen_port={SERVER_PORT}"]
        for client in self.clients.values():
            lines += [f"public_key={base64_to_hex(client.public_key)}",
                      f"allowed_ip={client.tunnel_ip}/32"]
        uapi.set_device(self.server_socket, lines)
        run(["ip", "-n", self.server_ns, "addr", "add", "10.79.0.1/24", "dev", self.server_if])
        run(["ip", "-n", self.server_ns, "link", "set", self.server_if, "up"])
        self.write_config()

    def restart_server(self) -> None:
        """Kill the server's wireguard-go and start it again with the same keys and
        peers: counters from zero, handshakes gone (``wg-quick down; wg-quick up``)."""
        self.lab.stop_daemon(self.server_if)
        self.start_server()

    def write_config(self, extra: dict[str, str] | None = None) -> None:
        """The server's wg-quick config as zsn reads it (peer names above the blocks);
        `extra` adds a line after a client's ``[Peer]`` (an expiry)."""
        text = (f"[Interface]\nAddress = 10.79.0.1/24\nListenPort = {SERVER_PORT}\n"
                f"PrivateKey = {self.server_key}\n")
        for client in self.clients.values():
            line = f"{extra[client.name]}\n" if extra and client.name in extra else ""
            text += (f"\n# {client.name}\n[Peer]\n{line}PublicKey = {client.public_key}\n"
                     f"AllowedIPs = {client.tunnel_ip}/32\n")
        self.config.write_text(text)

    def add_client(self, name: str, number: int, keepalive: int | None) -> Client:
        """A client in its own namespace, its own veth to the server's namespace."""
        ns = self.lab.namespace(f"c{number}")
        self.lab.veth(self.server_ns, f"192.168.{80 + number}.1/24", ns,
                      f"192.168.{80 + number}.2/24", suffix=str(number))
        key = new_private_key()
        client = Client(name, ns, self.lab.name(f"c{number}"), key, public_key_from_private(key),
                        f"10.79.0.{10 + number}", Path())
        client.socket = self.lab.wireguard_go(ns, client.ifname)
        lines = [f"private_key={base64_to_hex(key)}",
                 f"public_key={base64_to_hex(public_key_from_private(self.server_key))}",
                 f"endpoint=192.168.{80 + number}.1:{SERVER_PORT}",
                 "allowed_ip=10.79.0.1/32"]
        if keepalive:
            lines.append(f"persistent_keepalive_interval={keepalive}")
        uapi.set_device(client.socket, lines)
        run(["ip", "-n", ns, "addr", "add", f"{client.tunnel_ip}/24", "dev", client.ifname])
        run(["ip", "-n", ns, "link", "set", client.ifname, "up"])
        self.clients[name] = client
        uapi.set_device(self.server_socket, [f"public_key={base64_to_hex(client.public_key)}",
                                             f"allowed_ip={client.tunnel_ip}/32"])
        self.write_config()
        return client

    def ping(self, client: Client, count: int = 1, size: int = 56) -> bool:
        return run(["ip", "netns", "exec", client.namespace, "ping", "-q", "-c", str(count),
                    "-i", "0.01", "-s", str(size), "-W", "2", "10.79.0.1"], timeout=60,
                   check=False).returncode == 0

    def handshake(self, client: Client, timeout: float = 60) -> None:
        wait_for(lambda: self.ping(client), timeout, f"a handshake of {client.name}")

    def server_peer(self, client: Client) -> dict[str, str]:
        """The server's view of `client` (its UAPI lines), or {} when it has none."""
        reply = uapi.exchange(self.server_socket, "get=1\n\n")
        found: dict[str, str] = {}
        wanted = base64_to_hex(client.public_key)
        current = None
        for line in reply.splitlines():
            key, _, value = line.partition("=")
            if key == "public_key":
                current = value
            elif current == wanted:
                found.setdefault("public_key", client.public_key)
                found[key] = value
        return found

    def zsn_argv(self, *args: str, wrapper: tuple[str, ...] = ()) -> list[str]:
        inner = [*wrapper, sys.executable, "-m", "zsn", *args]
        binds = {str(self.folder / "etc"): "/etc/wireguard",
                 str(self.folder / "var/lib"): "/var/lib"}
        return ["ip", "netns", "exec", self.server_ns, *private_argv(binds, inner)]

    def zsn(self, *args: str, wrapper: tuple[str, ...] = (),
            check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(self.zsn_argv(*args, wrapper=wrapper), capture_output=True,
                                text=True, timeout=120, check=False, cwd=REPO,
                                env=_environment())
        if check and result.returncode != 0:
            raise AssertionError(f"zsn {' '.join(args)}: {result.stdout}{result.stderr}")
        return result

    def peer_log(self, client: Client) -> dict[str, Any]:
        result = self.zsn("peer", "log", self.server_if, client.name, "--json", "--hours", "2")
        data: dict[str, Any] = json.loads(result.stdout)
        return data


def _environment() -> dict[str, str]:
    import os

    # No bytecode written: strace-killed runs would otherwise leave .pyc renames
    # among the writes counted.
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
