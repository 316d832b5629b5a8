"""What a test needs from the machine: skipped on a developer's box without it,
a failure under CI (CI=true), where a missing tool must never pass silently."""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest


def unavailable(message: str) -> NoReturn:
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def needs_tools(*tools: str) -> None:
    absent = [tool for tool in tools if shutil.which(tool) is None]
    if absent:
        unavailable(f"missing tools: {', '.join(absent)}")
