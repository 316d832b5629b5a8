"""The exceptions zsn raises: each carries a message fit to show a user as it is."""


class ZsnError(Exception):
    """Base of every error zsn reports to a user."""


class CommandError(ZsnError):
    """A program could not be run, timed out, or failed."""


class FileChangedError(ZsnError):
    """A file changed on disk after zsn read it; writing would lose someone's edit."""


class NetlinkAccessError(ZsnError):
    """A netlink request failed; the message says why in plain words."""


class SocketError(ZsnError):
    """A control socket (UAPI, management) could not be reached or answered badly."""


class ValidationError(ZsnError):
    """User input was refused before anything was changed."""


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
