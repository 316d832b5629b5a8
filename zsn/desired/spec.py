"""What the sections' declared types share: a domain's check as the refusal of a field
(msgspec names the field of a ``ValueError`` raised in ``__post_init__``), and the
values a list gives twice."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from zsn.errors import ValidationError

T = TypeVar("T")


def checked(check: Callable[..., T], *args: Any) -> T:
    """`check(*args)`, its refusal as the ValueError a decoded field raises (the decoder
    names the field)."""
    try:
        return check(*args)
    except ValidationError as exc:
        raise ValueError(str(exc)) from None


def repeated(values: Iterable[str]) -> list[str]:
    """The values given more than once, sorted (in one pass: a file of 1,000 peers)."""
    return sorted(value for value, count in Counter(values).items() if count > 1)
