"""A throw-away PKI for the labs (OpenVPN, the exporter's TLS, 802.1X), made with
`cryptography`: a CA, a server and a client certificate, each with the subject
alternative names asked for (IP addresses or DNS names). EC keys by default; RSA where
a peer's TLS library is narrower (iwd's ell)."""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Pki:
    ca_cert: str
    server_cert: str
    server_key: str
    client_cert: str
    client_key: str


PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


def _new_key(kind: str) -> PrivateKey:
    if kind == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: PrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key_usage(*, ca: bool, rsa_key: bool = False) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True, key_encipherment=rsa_key and not ca, content_commitment=False,
        data_encipherment=False, key_agreement=not ca and not rsa_key, key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False, decipher_only=False)


def _alternative_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def _issue(
    ca_key: PrivateKey, ca_name: x509.Name, common_name: str,
    usage: x509.ObjectIdentifier, names: Sequence[str] = (), kind: str = "ec",
) -> tuple[str, str]:
    key = _new_key(kind)
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name)).issuer_name(ca_name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(ca=False, rsa_key=kind == "rsa"), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        # Key identifiers, as real certificates have: the kernel's keyring, through
        # which iwd checks a chain, finds an issuer by them.
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                       critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
            ca_key.public_key()), critical=False)
    )
    if names:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([_alternative_name(name) for name in names]),
            critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return cert.public_bytes(serialization.Encoding.PEM).decode(), _pem_key(key)


def _make_ca(kind: str, ca_name: x509.Name) -> tuple[PrivateKey, x509.Certificate]:
    ca_key = _new_key(kind)
    now = datetime.datetime.now(datetime.UTC)
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                       critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return ca_key, ca


def make_ca(*, kind: str = "ec", ca_name_text: str = "zov-lab-ca") -> str:
    """A CA's certificate alone (one that signed nothing a test serves: a wrong CA)."""
    return _make_ca(kind, _name(ca_name_text))[1].public_bytes(
        serialization.Encoding.PEM).decode()


def make_pki(server_names: Sequence[str] = (), client_names: Sequence[str] = (), *,
             kind: str = "ec", ca_name_text: str = "zov-lab-ca") -> Pki:
    ca_name = _name(ca_name_text)
    ca_key, ca = _make_ca(kind, ca_name)
    server_cert, server_key = _issue(ca_key, ca_name, "zov-server",
                                     ExtendedKeyUsageOID.SERVER_AUTH, server_names, kind)
    client_cert, client_key = _issue(ca_key, ca_name, "zov-client",
                                     ExtendedKeyUsageOID.CLIENT_AUTH, client_names, kind)
    return Pki(ca.public_bytes(serialization.Encoding.PEM).decode(),
               server_cert, server_key, client_cert, client_key)


def server_config(pki: Pki, *, management: str, port: int = 1194, extra: str = "") -> str:
    """A tun server pushing one DNS server and one search domain to its clients."""
    return f"""\
port {port}
proto udp
dev tun
topology subnet
server 10.87.0.0 255.255.255.0
push "dhcp-option DNS 10.87.0.1"
push "dhcp-option DOMAIN zov.test"
dh none
keepalive 5 30
verb 3
management {management} unix
{extra}<ca>
{pki.ca_cert}</ca>
<cert>
{pki.server_cert}</cert>
<key>
{pki.server_key}</key>
"""


def client_config(pki: Pki, *, remote: str, port: int = 1194, extra: str = "") -> str:
    return f"""\
# zsn lab client
client
dev tun
proto udp
remote {remote} {port}
nobind
remote-cert-tls server
verb 3
{extra}<ca>
{pki.ca_cert}</ca>
<cert>
{pki.client_cert}</cert>
<key>
{pki.client_key}</key>
"""
