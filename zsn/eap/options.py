"""The 802.1X options ``zsn wifi connect`` and ``zsn link 8021x`` share: one set of flags,
read into one `EapRequest` (each option's dest is the request's key, so a refusal names
the option in the CLI and the field in the WLAN pane's form)."""

from __future__ import annotations

import argparse
import sys

from zsn.eap.request import (
    METHODS,
    PHASE2,
    EapRequest,
    EapSecret,
    read_secret_file,
    request_from_values,
)


def add_eap_arguments(parser: argparse.ArgumentParser, *, required: bool = False) -> None:
    group = parser.add_argument_group(
        "802.1X (enterprise)", "the server is always checked: --ca-cert and "
        "--server-domain, unless --no-server-check")
    group.add_argument("--eap", dest="method", choices=METHODS, required=required,
                       help="the EAP method")
    group.add_argument("--eduroam", action="store_true",
                       help="eduroam: PEAP/MSCHAPv2, outer identity anonymous@REALM "
                            "(--server-domain still needed)")
    group.add_argument("--identity", metavar="ID", help="the user name (inner identity)")
    group.add_argument("--anonymous-identity", metavar="ID",
                       help="the outer identity sent in clear (PEAP, TTLS)")
    group.add_argument("--phase2", choices=PHASE2,
                       help="the inner method (PEAP: mschapv2, gtc; TTLS: pap, mschapv2, gtc)")
    secret = group.add_mutually_exclusive_group()
    secret.add_argument("--password-file", metavar="FILE",
                        help="read the password from FILE (- for standard input)")
    secret.add_argument("--password-stdin", action="store_true",
                        help="read the password from standard input")
    group.add_argument("--ca-cert", metavar="FILE",
                       help="the CA that signed the server's certificate (PEM)")
    group.add_argument("--server-domain", metavar="NAME",
                       help="the server's name in its certificate (radius.example.org)")
    group.add_argument("--client-cert", metavar="FILE", help="EAP-TLS: the client certificate")
    group.add_argument("--client-key", metavar="FILE", help="EAP-TLS: its private key (PEM)")
    group.add_argument("--key-password-file", metavar="FILE",
                       help="the client key's passphrase, when it is encrypted")
    group.add_argument("--no-server-check", action="store_true",
                       help="accept a profile that does not check the server (risky: "
                            "the lint flags it)")


def wants_eap(args: argparse.Namespace) -> bool:
    return bool(args.method or args.eduroam or args.identity or args.password_file
                or args.password_stdin or args.ca_cert or args.client_cert)


def request_from_args(args: argparse.Namespace) -> EapRequest:
    """The request the options ask for; passwords read from their files or stdin."""
    stdin_text = sys.stdin.read(4096) if args.password_stdin or args.password_file == "-" \
        or args.key_password_file == "-" else None
    password: EapSecret | None = None
    if args.password_stdin:
        password = read_secret_file("-", "password", stdin_text)
    elif args.password_file is not None:
        password = read_secret_file(args.password_file, "password", stdin_text)
    key_password = read_secret_file(args.key_password_file, "key passphrase", stdin_text) \
        if args.key_password_file is not None else None
    values = {key: getattr(args, key) for key in (
        "method", "identity", "anonymous_identity", "phase2", "ca_cert", "server_domain",
        "client_cert", "client_key", "no_server_check", "eduroam")}
    return request_from_values(values, password, key_password)
