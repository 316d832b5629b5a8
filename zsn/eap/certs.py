"""Certificates and keys an 802.1X profile names, copied where the daemon reads them.

The files the user names (``--ca-cert``, ``--client-cert``, ``--client-key``) are read
as given (the user's own files, not the tree under ``--root``), checked to be what they
claim (PEM certificates; a private key that opens, with its passphrase when it has
one), and copied into ``/etc/zsn/eap/NAME/`` (0700): ``ca.pem`` and ``client.pem``
0644, ``client.key`` 0600. The profile refers to the copies, so a moved or deleted
download does not break the network, and forgetting the profile can remove them.
"""

from __future__ import annotations

from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from zsn.eap.iwd import Files
from zsn.eap.request import EapRequest
from zsn.errors import ValidationError
from zsn.formats.pem import intent_of
from zsn.plan import FileEdit
from zsn.system import files
from zsn.system.files import PRIVATE_FILE_MODE
from zsn.system.host import Host

CERT_DIR = "/etc/zsn/eap"
MAX_PEM = 1 << 20
PUBLIC_MODE = 0o644


def _read(path: str, what: str, key: str) -> str:
    try:
        with open(path, "rb") as handle:  # named by the user, outside the tree
            data = handle.read(MAX_PEM + 1)
    except FileNotFoundError:
        raise ValidationError(f"{what} {path}: no such file", field=key) from None
    except PermissionError:
        raise ValidationError(f"{what} {path}: permission denied", field=key) from None
    except IsADirectoryError:
        raise ValidationError(f"{what} {path}: is a directory", field=key) from None
    if len(data) > MAX_PEM:
        raise ValidationError(f"{what} {path}: over {MAX_PEM} bytes", field=key)
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        raise ValidationError(f"{what} {path}: not a PEM file (DER or PKCS#12: convert "
                              "it with openssl to PEM)", field=key) from None


def _certificates(text: str, path: str, what: str, key: str) -> None:
    try:
        found = x509.load_pem_x509_certificates(text.encode())
    except ValueError:
        found = []
    if not found:
        raise ValidationError(f"{what} {path}: holds no PEM certificate", field=key)


def _private_key(text: str, path: str, request: EapRequest) -> None:
    secret = request.key_password.reveal().encode() if request.key_password else None
    try:
        serialization.load_pem_private_key(text.encode(), password=secret)
    except TypeError:
        what = "is encrypted: give its passphrase" if secret is None \
            else "is not encrypted: it takes no passphrase"
        raise ValidationError(f"client key {path} {what}", field="key_password") from None
    except ValueError:
        raise ValidationError(f"client key {path}: not a PEM private key, or the "
                              "passphrase does not open it", field="client_key") from None


@dataclass(frozen=True)
class Copies:
    paths: Files
    """The copies, as the daemon sees them (system paths)."""
    edits: list[FileEdit]


def copy_plan(host: Host, name: str, request: EapRequest) -> Copies:
    """The copies of `request`'s files into ``CERT_DIR/name`` (`name` checked by the
    caller: a profile name, a file name part)."""
    if not name or "/" in name or name in (".", ".."):
        raise ValidationError(f"{name!r} cannot name a certificate folder")
    folder = f"{CERT_DIR}/{name}"
    wanted: list[tuple[str, str, str, int]] = []
    if request.ca_cert:
        text = _read(request.ca_cert, "CA certificate", "ca_cert")
        _certificates(text, request.ca_cert, "CA certificate", "ca_cert")
        wanted.append(("ca.pem", text, "ca_cert", PUBLIC_MODE))
    if request.client_cert:
        text = _read(request.client_cert, "client certificate", "client_cert")
        _certificates(text, request.client_cert, "client certificate", "client_cert")
        wanted.append(("client.pem", text, "client_cert", PUBLIC_MODE))
    if request.client_key:
        text = _read(request.client_key, "client key", "client_key")
        _private_key(text, request.client_key, request)
        wanted.append(("client.key", text, "client_key", PRIVATE_FILE_MODE))
    edits = []
    placed: dict[str, str] = {}
    for file_name, text, key, mode in wanted:
        system_path = f"{folder}/{file_name}"
        path = host.path(system_path)
        previous = files.read_tracked(path) if files.exists(path) else None
        if previous is not None and previous.text == text and previous.mode == mode:
            placed[key] = system_path
            continue
        edits.append(FileEdit(path, previous, text, mode, private_dir=True,
                              shown_in_full=key != "client_key", backup=False,
                              intent=intent_of(text, system_path)))
        placed[key] = system_path
    return Copies(Files(placed.get("ca_cert"), placed.get("client_cert"),
                        placed.get("client_key")), edits)
