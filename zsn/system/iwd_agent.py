"""zsn's passphrase agent for iwd (net.connman.iwd.Agent), exported with dbus-fast.

No ``from __future__ import annotations`` here: dbus-fast reads the D-Bus signatures
from the methods' annotations, and takes a postponed ``None`` for a type.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from dbus_fast import DBusError
from dbus_fast.annotations import DBusObjectPath, DBusStr
from dbus_fast.service import ServiceInterface, dbus_method

AGENT = "net.connman.iwd.Agent"
CANCELED = "net.connman.iwd.Agent.Error.Canceled"


@dataclass
class AgentLog:
    """What the agent was asked, for the caller to explain a failure (no secrets)."""

    requests: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    cancel_reasons: list[str] = field(default_factory=list)


class PassphraseAgent(ServiceInterface):
    """Answers one RequestPassphrase for the network `accepts` names; refuses the rest."""

    def __init__(self, accepts: Callable[[str], bool], passphrase: str | None,
                 log: AgentLog) -> None:
        super().__init__(AGENT)
        self._accepts = accepts
        self._passphrase = passphrase
        self.log = log

    def __repr__(self) -> str:
        return "PassphraseAgent()"

    @dbus_method(name="RequestPassphrase")
    def request_passphrase(self, network: DBusObjectPath) -> DBusStr:
        self.log.requests.append(network)
        if self._passphrase is None or not self._accepts(network):
            self.log.refused.append(network)
            raise DBusError(CANCELED, "zsn has no passphrase for this request")
        answer, self._passphrase = self._passphrase, None  # one answer per connect
        return answer

    @dbus_method(name="Cancel")
    def cancel(self, reason: DBusStr) -> None:
        self.log.cancel_reasons.append(reason)

    @dbus_method(name="Release")
    def release(self) -> None:
        self._passphrase = None
