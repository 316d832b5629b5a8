"""A probe that lives in one network namespace of the access-rules lab: it listens on
the lab's TCP ports and, one line at a time on stdin, sends real packets and says what
came back (``python -m tests.lab.acl_probe PORT ...``, run under ``ip netns exec``).

    icmp ADDRESS        -> ok | rejected | timeout   (an echo request: reply, or an
                                                      ICMP error naming our request)
    tcp ADDRESS PORT    -> ok | rejected | timeout   (a connection: made, or refused
                                                      by a reset or an ICMP error)
    list TABLE          -> ``nft -j list table inet TABLE`` on one line, through
                           libnftables (no process per reading: the lab reads the
                           counters after every probe)

Started once per namespace, so the lab's hundreds of probes cost no process start
each; every answer is one line, so the caller can read the firewall's counters
between two probes.
"""

from __future__ import annotations

import ctypes
import errno
import ipaddress
import os
import select
import socket
import struct
import sys
import threading
import time

TIMEOUT = 3.0


def _listener(port: int) -> socket.socket:
    server = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    server.bind(("::", port))
    server.listen(64)
    return server


def _accept(server: socket.socket) -> None:
    while True:
        connection, _ = server.accept()
        connection.close()


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total: int = sum(struct.unpack(f"!{len(data) // 2}H", data))
    total = (total >> 16) + (total & 0xFFFF)
    total += total >> 16
    return ~total & 0xFFFF


def icmp(address: str) -> str:
    ip = ipaddress.ip_address(address)
    # A new echo id each time: conntrack keys a ping's flow by its id, and a probe must be
    # a new flow (an old one is a reply-tracked flow the policy no longer judges).
    ident, sequence = struct.unpack("!HH", os.urandom(4))
    if ip.version == 4:
        sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        header = struct.pack("!BBHHH", 8, 0, 0, ident, sequence)
        payload = b"zsn-acl-lab"
        packet = struct.pack("!BBHHH", 8, 0, _checksum(header + payload), ident,
                             sequence) + payload
        echo_reply, unreachable = 0, 3
    else:
        sock = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
        packet = struct.pack("!BBHHH", 128, 0, 0, ident, sequence) + b"zsn-acl-lab"
        echo_reply, unreachable = 129, 1
    with sock:
        sock.sendto(packet, (address, 0))
        deadline = time.monotonic() + TIMEOUT
        while (left := deadline - time.monotonic()) > 0:
            if not select.select([sock], [], [], left)[0]:
                break
            data, _ = sock.recvfrom(4096)
            if ip.version == 4:
                data = data[(data[0] & 0x0F) * 4:]  # raw IPv4 sockets include the header
            kind = data[0]
            if kind == echo_reply and struct.unpack("!HH", data[4:8]) == (ident, sequence):
                return "ok"
            if kind == unreachable and _names_our_request(data[8:], ip.version, ident,
                                                          sequence):
                return "rejected"
    return "timeout"


def _names_our_request(original: bytes, version: int, ident: int, sequence: int) -> bool:
    """Whether the packet an ICMP error quotes is our echo request."""
    offset = (original[0] & 0x0F) * 4 if version == 4 else 40
    quoted = original[offset:offset + 8]
    return len(quoted) == 8 and struct.unpack("!HH", quoted[4:8]) == (ident, sequence)


def tcp(address: str, port: int) -> str:
    family = socket.AF_INET if ipaddress.ip_address(address).version == 4 else socket.AF_INET6
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.settimeout(TIMEOUT)
        try:
            sock.connect((address, port))
        except TimeoutError:
            return "timeout"
        except OSError as exc:
            if exc.errno in (errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.EACCES,
                             errno.ENETUNREACH):
                return "rejected"
            return f"error {exc.errno}"
    return "ok"


class Nftables:
    """libnftables, as nft itself and upstream's Python binding (py/nftables.py) use it."""

    OUTPUT_JSON = 1 << 4

    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libnftables.so.1")
        self.lib.nft_ctx_new.restype = ctypes.c_void_p
        self.lib.nft_ctx_new.argtypes = [ctypes.c_int]
        self.lib.nft_ctx_output_set_flags.argtypes = [ctypes.c_void_p, ctypes.c_uint]
        for name in ("nft_ctx_buffer_output", "nft_ctx_buffer_error"):
            getattr(self.lib, name).argtypes = [ctypes.c_void_p]
        for name in ("nft_ctx_get_output_buffer", "nft_ctx_get_error_buffer"):
            getattr(self.lib, name).restype = ctypes.c_char_p
            getattr(self.lib, name).argtypes = [ctypes.c_void_p]
        self.lib.nft_run_cmd_from_buffer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        self.ctx = self.lib.nft_ctx_new(0)
        self.lib.nft_ctx_output_set_flags(self.ctx, self.OUTPUT_JSON)
        self.lib.nft_ctx_buffer_output(self.ctx)
        self.lib.nft_ctx_buffer_error(self.ctx)

    def run(self, command: str) -> str:
        code = self.lib.nft_run_cmd_from_buffer(self.ctx, command.encode())
        output = (self.lib.nft_ctx_get_output_buffer(self.ctx) or b"").decode()
        error = (self.lib.nft_ctx_get_error_buffer(self.ctx) or b"").decode()
        return output.strip() if code == 0 else "error " + " ".join(error.split())


def main(ports: list[int]) -> None:
    for port in ports:  # listening before "ready": the lab probes at once
        threading.Thread(target=_accept, args=(_listener(port),), daemon=True).start()
    print("ready", flush=True)
    nft: Nftables | None = None
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["list"] and len(words) == 2:
            nft = nft or Nftables()
            answer = nft.run(f"list table inet {words[1]}")
        elif words[:1] == ["icmp"] and len(words) == 2:
            answer = icmp(words[1])
        elif words[:1] == ["tcp"] and len(words) == 3:
            answer = tcp(words[1], int(words[2]))
        else:
            answer = f"error: {line.strip()!r}"
        print(answer, flush=True)


if __name__ == "__main__":
    main([int(port) for port in sys.argv[1:]])
