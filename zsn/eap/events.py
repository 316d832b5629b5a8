"""What wpa_supplicant's events say about an 802.1X attempt, in words an admin can act on.

The supplicant reports each step on its monitor socket (hostap's wpa_ctrl.h, eap.c):
``CTRL-EVENT-EAP-STARTED``, ``-EAP-METHOD``, ``-EAP-PEER-CERT``, ``-EAP-STATUS
status='remote certificate verification'``, then ``-EAP-SUCCESS`` or
``-EAP-FAILURE``; a certificate it refuses is ``CTRL-EVENT-EAP-TLS-CERT-ERROR reason=N``
(src/crypto/tls.h: 1 untrusted, 2 revoked, 3 not yet valid, 4 expired, 5 subject,
6 altsubject, 9 domain suffix, 10 domain mismatch, 12 DN ...). `EapAttempt` keeps what
it saw and says why the attempt failed, from those events only: a failure after the
server's certificate was verified is the server refusing the credentials.

iwd answers a failed connect with ``net.connman.iwd.Failed`` whatever the cause; its
log (the journal's ``iwd.service`` lines) says a little more (src/eap-tls-common.c,
src/eapol.c): ``TTLS: Tunnel has disconnected with alert: bad_certificate`` when
its TLS refused a certificate (the same alert for a wrong CA and a name mismatch), and
``EAP completed with eapFail`` (or ``eapTimeout``). `iwd_reason` says that much.
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


_IWD_ALERT = re.compile(r"\b([A-Z][A-Z0-9-]*): Tunnel has disconnected with alert: ([a-z_]+)")
CERTIFICATE_ALERTS = frozenset({"bad_certificate", "unsupported_certificate",
                                "certificate_revoked", "certificate_expired",
                                "certificate_unknown", "unknown_ca"})


def iwd_reason(messages: list[str]) -> str | None:
    """Why an 802.1X attempt failed, from iwd's log lines since it began (oldest first);
    None when they do not tell (no EAP outcome among them)."""
    alert: str | None = None
    outcome: str | None = None
    for message in messages:
        found = _IWD_ALERT.search(message)
        if found is not None and alert is None:
            alert = found.group(2)
        if "EAP completed with eapFail" in message:
            outcome = "fail"
        elif "EAP completed with eapTimeout" in message:
            outcome = "timeout"
    if alert in CERTIFICATE_ALERTS:
        return (f"a certificate was refused in the TLS handshake (iwd: {alert}): the "
                "server's certificate is not signed by the CA given (--ca-cert) or not "
                "for the name given (--server-domain), or the server refused the client "
                "certificate; iwd does not say which")
    if outcome == "timeout":
        return "the authentication server stopped answering"
    if outcome == "fail" and alert in (None, "close_notify"):
        return WRONG_CREDENTIALS
    return None
