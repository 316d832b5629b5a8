"""The long run of the history lab: a keepalive peer over more than three re-key
intervals, and a peer whose endpoint goes away, recorded by ``zsn wg record`` (what
the timer runs) every few seconds. Run as a module; it writes what it saw as JSON:

    python -m tests.lab.history_run OUT.json [SECONDS]

WireGuard's timers are real, so this takes SECONDS (default 400: three re-keys at
120 s each and some) whatever the machine. The tests start it in the background as
soon as they are collected (tests/integration/conftest.py) and read its result at
the end of the session, so its wall time overlaps the rest of the suite; the test
(test_wireguard_history_lab.py) makes every assertion on what it wrote.
"""

from __future__ import annotations

import json
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.lab.history import HistoryLab
from tests.lab.netns import Lab

RECORD_EVERY = 10.0
LEAVES_AFTER = 20.0
"""Seconds after the first handshakes when the second client's wireguard-go is killed."""


def _stop(_signum: int, _frame: object) -> None:
    raise SystemExit(1)  # unwinds through the finally below: the lab is cleaned up


def _names_another_interface(line: str, tag: str) -> bool:
    """Whether `line` is `zsn wg record: IFACE: ...` about an interface not this lab's."""
    head, _, rest = line.partition(": ")
    name = rest.partition(":")[0]
    return head == "zsn wg record" and bool(rest) and not name.startswith(tag)


def main(out: Path, seconds: float) -> None:
    signal.signal(signal.SIGTERM, _stop)
    result: dict[str, Any] = {"seconds": seconds, "records": 0, "record_errors": [],
                              "steady_handshakes": []}
    lab = Lab(tag="zh" + hex(int(time.time() * 1000) % 0xFFFFFF)[2:].rjust(6, "0"))
    folder = Path(tempfile.mkdtemp(prefix="zsn-history-lab-"))
    try:
        history = HistoryLab(lab, folder)
        history.start_server()
        steady = history.add_client("steady", 1, keepalive=25)
        leaver = history.add_client("leaver", 2, keepalive=25)
        history.handshake(steady)
        history.handshake(leaver)
        started = time.monotonic()
        result["started_at"] = time.time()
        left = False
        while True:
            elapsed = time.monotonic() - started
            if not left and elapsed >= LEAVES_AFTER:
                lab.stop_daemon(leaver.ifname)  # its endpoint goes away for good
                result["leaver_gone_at"] = time.time()
                left = True
            recorded = history.zsn("wg", "record", check=False)
            result["records"] += 1
            if recorded.returncode != 0:
                # Only this lab's: the tests running meanwhile kill tunnels on purpose.
                own = [line for line in recorded.stderr.splitlines()
                       if not _names_another_interface(line, lab.tag)]
                if own:
                    result["record_errors"].append("\n".join(own))
            handshake = history.server_peer(steady).get("last_handshake_time_sec")
            if handshake and int(handshake) not in result["steady_handshakes"]:
                result["steady_handshakes"].append(int(handshake))
            if elapsed >= seconds:
                break
            time.sleep(max(0.0, RECORD_EVERY - (time.monotonic() - started - elapsed)))
        result["ended_at"] = time.time()
        result["steady"] = history.peer_log(steady)
        result["leaver"] = history.peer_log(leaver)
    except Exception as exc:  # noqa: BLE001 - reported to the test, which fails with it
        result["failure"] = f"{type(exc).__name__}: {exc}"
    finally:
        try:
            lab.close()
        finally:
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
            out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main(Path(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 400.0)
