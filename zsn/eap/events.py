"""What wpa_supplicant's events say about an 802.1X attempt, in words an admin can act on.

The supplicant reports each step on its monitor socket (hostap's wpa_ctrl.h, eap.c):
``CTRL-EVENT-EAP-STARTED``, ``-EAP-METHOD``, ``-EAP-PEER-CERT``, ``-EAP-STATUS
status='remote certificate verification'``, then ``-EAP-SUCCESS`` or
``-EAP-FAILURE``; a certificate it refuses is ``CTRL-EVENT-EAP-TLS-CERT-ERROR reason=N``
(src/crypto/tls.h: 1 untrusted, 2 revoked, 3 not yet valid, 4 expired, 5 subject,
6 altsubject, 9 domain suffix, 10 domain mismatch, 12 DN ...). `EapAttempt` keeps what
it saw and says why the attempt failed, from those events only: a failure after the
server's certificate was verified is the server refusing the credentials.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from zsn.system.wpa_ctrl import Event

CERT_REASONS = {
    "1": "the server's certificate is not signed by the CA given (--ca-cert): not the "
         "network's server, or the wrong CA file",
    "2": "the server's certificate was revoked",
    "3": "the server's certificate is not valid yet (check the clock)",
    "4": "the server's certificate has expired (or the clock is wrong)",
    "5": "the server's certificate subject does not match",
    "6": "the server's certificate names do not match",
    "9": "server name mismatch: the server's certificate is not for the name given "
         "(--server-domain)",
    "10": "server name mismatch: the server's certificate is not for the name given "
          "(--server-domain)",
    "12": "the server's certificate subject does not match",
}
WRONG_CREDENTIALS = ("the server refused the identity or password (wrong password, or an "
                     "unknown user)")
WRONG_CLIENT_CERT = "the server refused the client certificate (or the identity)"
NO_RESPONSE = "no response from the authenticator (is 802.1X on for this port or network?)"
_QUOTED = re.compile(r"(\w+)='((?:[^'\\]|\\.)*)'")


@dataclass
class EapAttempt:
    """The events of one attempt, in order; `reason` reads them."""

    method: str | None = None
    started: bool = False
    server_verified: bool = False
    cert_error: str | None = None
    cert_detail: str | None = None
    succeeded: bool = False
    failed: bool = False
    timed_out: bool = False
    seen: list[str] = field(default_factory=list)

    def feed(self, event: Event) -> None:
        name = event.name
        self.seen.append(name)
        if name == "CTRL-EVENT-EAP-STARTED":
            self.started = True
        elif name == "CTRL-EVENT-EAP-METHOD":
            match = re.search(r"\(([^)]+)\)", event.text)
            self.method = match.group(1) if match else self.method
        elif name == "CTRL-EVENT-EAP-STATUS":
            quoted = dict(_QUOTED.findall(event.text))
            if quoted.get("status") == "remote certificate verification" and \
                    quoted.get("parameter") == "success":
                self.server_verified = True
        elif name == "CTRL-EVENT-EAP-TLS-CERT-ERROR" and self.cert_error is None:
            self.cert_error = event.field("reason") or "?"
            self.cert_detail = dict(_QUOTED.findall(event.text)).get("err")
        elif name == "CTRL-EVENT-EAP-SUCCESS":
            self.succeeded = True
        elif name == "CTRL-EVENT-EAP-FAILURE":
            self.failed = True
        elif name == "CTRL-EVENT-EAP-TIMEOUT-FAILURE":
            self.failed = self.timed_out = True

    @property
    def done(self) -> bool:
        return self.succeeded or self.failed

    @property
    def reason(self) -> str:
        """Why the attempt failed, as far as the events tell."""
        if self.cert_error is not None:
            words = CERT_REASONS.get(self.cert_error, "the server's certificate was refused")
            detail = f"; wpa_supplicant: {self.cert_detail}" if self.cert_detail else ""
            return f"server certificate not trusted: {words}{detail}" \
                if self.cert_error in ("1", "2", "3", "4") else f"{words}{detail}"
        if not self.started:
            return NO_RESPONSE
        if self.failed and self.server_verified:
            return WRONG_CLIENT_CERT if self.method == "TLS" else WRONG_CREDENTIALS
        if self.timed_out:
            return "the authentication server stopped answering"
        if self.failed:
            return "authentication failed (wpa_supplicant gave no reason)"
        return "authentication did not finish"
