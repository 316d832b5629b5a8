"""iwd's ``.8021x`` network files: read line by line (round trip exact), written from an
`EapRequest`, and read back before they are committed.

iwd's settings format (ell's l_settings): ``[Group]`` headers, ``Key=Value`` lines,
``#`` comments; values escape ``\\n \\r \\t \\\\`` and a leading space as ``\\s``.
``[@pem@NAME]`` groups hold a PEM verbatim (``embed:NAME`` refers to it). The keys are
iwd.network(5)'s: ``EAP-Method``, ``EAP-Identity``, ``EAP-<METHOD>-CACert``,
``-ServerDomainMask``, ``-Phase2-Method``, ``-Phase2-Identity``, ``-Phase2-Password``,
``EAP-TLS-ClientCert``, ``-ClientKey``, ``-ClientKeyPassphrase``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zsn.eap.profile import EapProfile
from zsn.eap.request import EapRequest
from zsn.errors import ParseError, ValidationError
from zsn.meaning import Entry, Format, Intent, Reading, Section, one_line

PHASE2_METHODS = {("peap", "mschapv2"): "MSCHAPV2", ("peap", "gtc"): "GTC",
                  ("ttls", "pap"): "Tunneled-PAP", ("ttls", "mschapv2"): "Tunneled-MSCHAPv2",
                  ("ttls", "gtc"): "GTC"}
_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNESCAPES = {"\\": "\\", "n": "\n", "r": "\r", "t": "\t", "s": " "}
MAX_LINES = 10_000


def escape(value: str) -> str:
    text = "".join(_ESCAPES.get(char, char) for char in value)
    return "\\s" + text[1:] if text.startswith(" ") else text


def unescape(text: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and text[index + 1] in _UNESCAPES:
            out.append(_UNESCAPES[text[index + 1]])
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)


@dataclass
class Settings:
    """An iwd settings file as lines, with each ``(group, key)``'s value and line index."""

    lines: list[str]
    values: dict[tuple[str, str], str] = field(default_factory=dict)
    where: dict[tuple[str, str], int] = field(default_factory=dict)
    groups: list[str] = field(default_factory=list)

    def get(self, group: str, key: str) -> str | None:
        return self.values.get((group, key))

    def render(self) -> str:
        return "".join(self.lines)

    def __repr__(self) -> str:  # values hold passwords
        return f"Settings({len(self.lines)} lines)"


def parse_settings(text: str, source: str = ".8021x") -> Settings:
    """Every line kept as it is: ``parse_settings(t).render() == t``."""
    lines = text.splitlines(keepends=True)
    if len(lines) > MAX_LINES:
        raise ParseError(f"{len(lines)} lines: not an iwd network file", source=source)
    settings = Settings(lines)
    group: str | None = None
    embedded = False
    for number, raw in enumerate(lines):
        line = raw.rstrip("\r\n")
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            group = stripped[1:-1]
            embedded = group.startswith("@pem@")
            if not group or any(ord(c) < 32 for c in group):
                raise ParseError("an empty or broken group name",
                                 source=source, line=number + 1)
            settings.groups.append(group)
            continue
        if embedded or not stripped or stripped.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ParseError("not Key=Value", source=source,
                             line=number + 1)
        if group is None:
            raise ParseError("a setting before any [group]",
                             source=source, line=number + 1)
        settings.values[(group, key.strip())] = unescape(value.strip())
        settings.where[(group, key.strip())] = number
    return settings


def profile_of(settings: Settings) -> EapProfile | None:
    """The 802.1X part of an iwd network file (None when it has no EAP-Method)."""
    method = settings.get("Security", "EAP-Method")
    if method is None:
        return None
    upper = method.upper()
    prefix = f"EAP-{upper}-"

    def value(key: str) -> str | None:
        return settings.get("Security", prefix + key) or None

    inner = value("Phase2-Identity") if upper in ("PEAP", "TTLS") else None
    return EapProfile(
        method=upper, identity=inner or settings.get("Security", "EAP-Identity"),
        phase2=value("Phase2-Method") if upper in ("PEAP", "TTLS") else None,
        ca_cert=value("CACert"), server_domain=value("ServerDomainMask"))


@dataclass(frozen=True)
class Files:
    """Where the certificates went (absolute paths the daemon reads)."""

    ca_cert: str | None = None
    client_cert: str | None = None
    client_key: str | None = None


def render(request: EapRequest, paths: Files, *, autoconnect: bool = True,
           hidden: bool = False) -> str:
    """A new ``.8021x`` file for `request`; the secrets are in it (the file is 0600 in
    iwd's 0700 directory): iwd reconnects by itself without asking anyone."""
    return rendered(request, paths, autoconnect=autoconnect, hidden=hidden)[0]


def rendered(request: EapRequest, paths: Files, *, autoconnect: bool = True,
             hidden: bool = False) -> tuple[str, Intent]:
    """`render`'s text and what it means (`zsn.meaning`: the plan's FileEdit reads it
    back with `IWD`): every value on one line."""
    method = request.method.upper()
    prefix = f"EAP-{method}-"
    entries: list[tuple[str, str]] = [("EAP-Method", method)]
    if request.method == "tls":
        entries.append(("EAP-Identity", request.identity))
    else:
        entries.append(("EAP-Identity", request.anonymous_identity or request.identity))
    if paths.ca_cert:
        entries.append((prefix + "CACert", paths.ca_cert))
    if request.server_domain:
        entries.append((prefix + "ServerDomainMask", request.server_domain))
    if request.method == "tls":
        assert paths.client_cert and paths.client_key
        entries += [(prefix + "ClientCert", paths.client_cert),
                    (prefix + "ClientKey", paths.client_key)]
        if request.key_password is not None:
            entries.append((prefix + "ClientKeyPassphrase", request.key_password.reveal()))
    else:
        assert request.phase2 is not None and request.password is not None
        entries += [(prefix + "Phase2-Method", PHASE2_METHODS[(request.method,
                                                               request.phase2)]),
                    (prefix + "Phase2-Identity", request.identity),
                    (prefix + "Phase2-Password", request.password.reveal())]
    for key, value in entries:
        one_line(value, key)
    lines = ["[Security]", *(f"{key}={escape(value)}" for key, value in entries)]
    extra = ([] if autoconnect else [("AutoConnect", "false")]) + (
        [("Hidden", "true")] if hidden else [])
    if extra:
        lines += ["", "[Settings]", *(f"{key}={value}" for key, value in extra)]
    text = "\n".join(lines) + "\n"
    _read_back(text, request, paths)
    intent = Intent(IWD)
    intent.whole([("Security", entries), *([("Settings", extra)] if extra else [])])
    return text, intent


def _read_back(text: str, request: EapRequest, paths: Files) -> None:
    """The rendered file, parsed by zsn's own reader, says what the request says."""
    profile = profile_of(parse_settings(text))
    wanted = EapProfile(method=request.method.upper(), identity=request.identity,
                        phase2=PHASE2_METHODS.get((request.method, request.phase2 or "")),
                        ca_cert=paths.ca_cert, server_domain=request.server_domain)
    if profile != wanted:
        raise ValidationError("the iwd profile zsn rendered does not read back as "
                              "requested; nothing was written")


class _IwdSettings:
    """iwd's settings files as `parse_settings` reads them (`zsn.meaning.Format`): each
    group with its keys, values unescaped; embedded PEM groups by name only."""

    name = "iwd settings"

    def key(self, key: str) -> str:
        return key

    def read(self, text: str, source: str) -> Reading:
        settings = parse_settings(text, source)
        sections = {group: Section(group, []) for group in settings.groups}
        for (group, key), value in settings.values.items():
            sections[group].entries.append(Entry(key, value, settings.where[(group, key)] + 1))
        return list(sections.values())


IWD: Format = _IwdSettings()
