"""What a stored 802.1X profile says, whoever wrote it: read from iwd's ``.8021x`` files,
wpa_supplicant's network blocks, netctl's ``WPAConfigSection`` and NetworkManager's
settings, for the known-networks table, the export and the lint."""

from __future__ import annotations

from dataclasses import dataclass

TLS_METHODS = ("PEAP", "TTLS", "TLS", "FAST", "TEAP")
"""Methods that authenticate the server by its certificate: without a CA and a name
check, the server is anyone's."""


@dataclass(frozen=True)
class EapProfile:
    method: str
    """As the backend names it, upper case: PEAP, TTLS, TLS, PWD ..."""
    identity: str | None
    """The identity an admin recognises: the inner one where there is one."""
    phase2: str | None = None
    ca_cert: str | None = None
    server_domain: str | None = None
    """The name check, as written (iwd's mask, domain_match ...)."""

    @property
    def needs_server_check(self) -> bool:
        return self.method in TLS_METHODS

    @property
    def server_checked(self) -> bool:
        """A CA and a server name: what a rogue server cannot fake."""
        return not self.needs_server_check or (
            self.ca_cert is not None and self.server_domain is not None)

    @property
    def missing(self) -> str:
        """What the server check lacks, in words ('no CA certificate and no server name')."""
        parts = [what for what, value in (("no CA certificate", self.ca_cert),
                                          ("no server name", self.server_domain))
                 if value is None]
        return " and ".join(parts)

    @property
    def title(self) -> str:
        return f"{self.method}/{self.phase2}" if self.phase2 else self.method
