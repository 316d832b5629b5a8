"""Host side of the QEMU kernel lab: one guest boot per group of guest tests.

Each ``tests/kernel/test_GROUP.py`` is a group; this test boots the lab kernel once
for it, runs it there, and fails with the names of the guest's failing tests and the
tail of its output. Adding a group is adding its file (see tests/lab/kernel.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lab.kernel import BOOT_TIMEOUT, LOCK_WAIT, groups, run_group

pytestmark = pytest.mark.kernel


@pytest.mark.timeout(LOCK_WAIT + BOOT_TIMEOUT + 120)
@pytest.mark.parametrize("group", groups())
def test_kernel_group(group: str, tmp_path: Path) -> None:
    run_group(group, tmp_path).check()
