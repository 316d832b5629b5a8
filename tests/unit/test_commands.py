"""Programs run from argv lists, with timeouts, and fail with plain reasons."""

from __future__ import annotations

import pytest

from zsn.errors import CommandError
from zsn.system.commands import run


def test_user_text_is_one_argument_never_shell() -> None:
    result = run(["printf", "%s", "wg0; rm -rf / $(id)"])
    assert result.stdout == "wg0; rm -rf / $(id)"


def test_a_string_is_refused() -> None:
    with pytest.raises(TypeError):
        run("ls -l")


def test_missing_program() -> None:
    with pytest.raises(CommandError, match="program not found"):
        run(["zsn-no-such-program"])


def test_timeout() -> None:
    with pytest.raises(CommandError, match="no answer within 0.2 s"):
        run(["sleep", "5"], timeout=0.2)


def test_failure_names_the_first_error_line() -> None:
    with pytest.raises(CommandError, match="ls failed: .*No such file"):
        run(["ls", "/zsn/no/such/dir"])
    assert run(["false"], check=False).returncode == 1
