"""Guest-side tests: each ``test_GROUP.py`` here runs inside the QEMU kernel lab.

The host never runs them itself: a plain ``pytest`` does not collect them, and
naming one explicitly skips it. The host-side wrapper
(tests/integration/test_kernel_lab.py) boots a guest per file and runs the file
there with LAB=1 (see tests/lab/kernel.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.lab.kernel import IN_GUEST
from tests.lab.netns import Lab

collect_ignore_glob = [] if IN_GUEST else ["test_*.py"]


@pytest.fixture(scope="session", autouse=True)
def _only_in_the_guest() -> None:
    # Session scope: it runs before any module-scoped lab fixture would.
    if not IN_GUEST:
        pytest.skip("runs inside the kernel lab guest: "
                    "pytest tests/integration/test_kernel_lab.py boots it")


@pytest.fixture
def lab() -> Iterator[Lab]:
    """Namespaces and veths, torn down after the test (the guest has no wireguard-go
    to require: kernel devices replace it)."""
    built = Lab()
    try:
        yield built
    finally:
        built.close()
