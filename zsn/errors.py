"""The exceptions zsn raises: each carries a message fit to show a user as it is."""

from __future__ import annotations

import errno
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

EXIT_OK = 0
EXIT_ERROR = 1
"""A daemon, a program or a file failed (a `ZsnError`)."""
EXIT_INVALID = 2
"""Bad input: refused with one line, nothing changed (a `ValidationError`)."""
EXIT_PARTIAL = 3
"""`zsn --export`: the snapshot was written, but a section could be read only in part."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'X'?)`` naming the choice nearest `word`, or ``""`` when none is
    near: the tail of a refusal of an unknown name."""
    from difflib import get_close_matches

    near = get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {near[0]!r}?)" if near else ""


class ZsnError(Exception):
    """Base of every error zsn reports to a user."""


class CommandError(ZsnError):
    """A program could not be run, timed out, or failed."""


class FileChangedError(ZsnError):
    """A file changed on disk after zsn read it; writing would lose someone's edit."""


class AccessDeniedError(ZsnError):
    """The system refused zsn a file, a folder, a socket or a request (not root?): what
    was read is not all there is, so a report must say so instead of looking complete.
    Callers test for it by class, never by the message's words."""


class UnsafeStateError(ZsnError):
    """A file or folder zsn keeps its own state in could be changed by someone else
    (`zsn.system.own_state`): refused, nothing read from it or written to it."""


class NetlinkError(ZsnError):
    """A netlink request failed; the message says why in plain words."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        """The kernel's errno (``errno.ENODEV`` ...); None when there was no answer in
        time, too much of one, or no socket to ask on."""


class NetlinkAccessDeniedError(NetlinkError, AccessDeniedError):
    """EPERM or EACCES: the request needs root (CAP_NET_ADMIN)."""


_NETLINK_REASONS = {
    errno.EPERM: "operation not permitted (needs root / CAP_NET_ADMIN)",
    errno.EACCES: "permission denied (needs root / CAP_NET_ADMIN)",
    errno.ENODEV: "no such network device",
    errno.ENOENT: "no such object",
    errno.EEXIST: "already exists",
    errno.EBUSY: "device or resource busy",
    errno.EINVAL: "invalid argument",
    errno.EOPNOTSUPP: "not supported by this kernel (module not loaded?)",
    errno.EAFNOSUPPORT: "address family not supported by this kernel",
    errno.EADDRNOTAVAIL: "address not available",
    errno.ENETUNREACH: "network unreachable",
    errno.ERANGE: "value out of range for this device (an MTU above what it or its "
                  "parent allows?)",
    errno.ENOTCONN: "not connected",
    errno.ENOSPC: "no space left (too many devices of this kind?)",
    errno.EADDRINUSE: "address already in use",
}


def netlink_error(what: str, code: int, detail: str | None = None) -> NetlinkError:
    """The error for errno `code` answering the request `what`, in plain words
    (`detail`, e.g. an OSError's strerror, for a code without words of its own)."""
    reason = _NETLINK_REASONS.get(code) or detail or f"error {code}"
    kind = NetlinkAccessDeniedError if code in (errno.EPERM, errno.EACCES) else NetlinkError
    return kind(f"{what}: {reason}", code)


class SocketError(ZsnError):
    """A control socket (UAPI, management) could not be reached or answered badly."""


class SocketGoneError(SocketError):
    """A control socket removed between being listed and being asked: its interface
    went away meanwhile (``wg-quick down``), which is no failure of the reading."""


class StaleSocketError(SocketError):
    """A control socket with no daemon behind it: the daemon was killed and left its
    file (a WireGuard UAPI socket whose wireguard-go died with a session)."""


class SocketAccessDeniedError(SocketError, AccessDeniedError):
    """The control socket is root's (or its daemon's user's) only."""


class ValidationError(ZsnError):
    """User input was refused before anything was changed.

    `field` names the input the error is about, as the core calls it (a
    `PeerRequest` attribute such as ``endpoint``, an argument of a ``plan_*``
    function). The message never names it the way one front end does: the CLI
    says which flag (``--endpoint``), a form which field ("Endpoint"), both from
    this one attribute (`zsn.headless.run_group`, `zsn.tui.screens.form.FormScreen`).
    """

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class SessionLinkError(ValidationError):
    """The change would touch the link this SSH session runs over (or one it sits on)
    and could cut the session off: it goes ahead only once the user names `link`
    (the CLI's ``--confirm-ssh-link``, the pane's question: `LivePane.ask_session_link`)."""

    def __init__(self, message: str, link: str, touched: list[str]) -> None:
        super().__init__(message)
        self.link = link
        """The link a confirmation must name."""
        self.touched = touched
        """The session's links the change touches."""


@contextmanager
def about_input(field: str) -> Iterator[None]:
    """A `ValidationError` raised inside is about the input `field` (unless it says
    which input itself): the checks stay generic, the caller knows what it checked."""
    try:
        yield
    except ValidationError as exc:
        if exc.field is None:
            exc.field = field
        raise


class ParseError(ZsnError):
    """A file or program output did not have the expected format."""

    def __init__(self, message: str, line: int | None = None, source: str | None = None):
        where = ""
        if source and line is not None:
            where = f"{source}:{line}: "
        elif line is not None:
            where = f"line {line}: "
        elif source:
            where = f"{source}: "
        super().__init__(where + message)
        self.line = line
        self.source = source
        self.reason = message
        """What is wrong, without the place."""
