"""Host side of the QEMU kernel lab: one guest boot per group of guest tests.

Each ``tests/kernel/test_GROUP.py`` is a group; the lab kernel boots once for it and
runs it there, and this test fails with the names of the guest's failing tests and the
tail of its output. The guests boot beside the host tests from the session's start
(`tests.lab.guests`); these tests run last and wait for them. Adding a group is adding
its file (see tests/lab/kernel.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lab import guests
from tests.lab.kernel import groups

pytestmark = pytest.mark.kernel


@pytest.mark.timeout(guests.WAIT + 120)
@pytest.mark.parametrize("group", groups())
def test_kernel_group(group: str, tmp_path: Path) -> None:
    guests.result(group, tmp_path).check()
