from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def lab() -> Iterator[Lab]:  # noqa: F821 - imported lazily below
    from tests.lab.netns import Lab, require_lab

    require_lab()
    built = Lab()
    try:
        yield built
    finally:
        built.close()
