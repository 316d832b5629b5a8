"""Whether a lab test can run here: in CI (CI=true) a missing piece fails, elsewhere it skips."""

from __future__ import annotations

import os
import shutil

import pytest


def require_lab(*tools: str) -> None:
    in_ci = os.environ.get("CI") == "true"
    problems = []
    if os.geteuid() != 0:
        problems.append("needs root (network namespaces, systemd-nspawn)")
    problems += [f"{tool} is not installed" for tool in tools if shutil.which(tool) is None]
    if not os.path.exists("/dev/net/tun"):
        problems.append("/dev/net/tun is missing")
    if problems:
        reason = "lab test: " + "; ".join(problems)
        if in_ci:
            pytest.fail(reason + " (CI=true: a missing tool is a failure)")
        pytest.skip(reason)
