"""Connecting to an enterprise (802.1X) network: each backend's own form of one
`zsn.eap.request.EapRequest`.

- iwd: a ``.8021x`` file in /var/lib/iwd (0600; the certificates copied beside zsn's
  other copies), then Network.Connect: iwd reads the file, asks no agent.
- wpa_supplicant: a network block over the control socket (``key_mgmt=WPA-EAP``,
  ``eap``, ``identity`` ... ``domain_match``), the outcome read from its EAP events.
- netctl: a profile with ``Security=wpa-configsection`` whose ``WPAConfigSection``
  holds the same network block, started as netctl's unit.

Every file is rendered from typed values and read back by zsn's own reader before the
plan is made; the plan's steps and notes never hold the password (file diffs mask it,
key files are not shown). A connect that fails undoes what it wrote: no profile is
left behind that does not work.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from zsn.bash import BASH, canonical, quote
from zsn.eap import certs
from zsn.eap import iwd as eap_iwd
from zsn.eap.events import iwd_reason
from zsn.eap.request import EapRequest
from zsn.eap.supplicant import network_values, profile_of_values
from zsn.errors import ValidationError, ZsnError
from zsn.meaning import Intent, one_line
from zsn.plan import FileEdit, LiveStep, Plan, Step
from zsn.system import files, journal
from zsn.system.dbus import SystemBus, run_sync
from zsn.system.files import PRIVATE_FILE_MODE, read_tracked
from zsn.system.host import Host
from zsn.system.wpa_ctrl import control_socket
from zsn.wlan import iwd as iwd_backend
from zsn.wlan import netctl, wpa
from zsn.wlan.model import WlanInterface
from zsn.wlan.ssid import display

PKCS8_MODULE = "/sys/module/pkcs8_key_parser"
IWD_FAILED = ("802.1X failed; iwd reports only that (not whether the password or the "
              "server's certificate was refused)")


def _stem(ssid: bytes) -> str:
    """A folder name for the network's certificates: iwd's own file name rule."""
    return iwd_backend.profile_path(ssid, "8021x").rsplit("/", 1)[1].removesuffix(".8021x")


def _what(request: EapRequest) -> str:
    checked = f"server {request.server_domain} checked against the CA given" \
        if request.server_checked else "server NOT checked (--no-server-check)"
    outer = f", outer identity {request.anonymous_identity}" \
        if request.anonymous_identity else ""
    return f"{request.title} as {request.identity}{outer}; {checked}"


async def _joined_by_itself(bus: SystemBus, station: str, ssid: bytes,
                            timeout: float = 30.0) -> bool:
    """iwd may start connecting to a network as soon as its new profile appears (a
    station in autoconnect mode): wait for that attempt's outcome instead."""
    from zsn.system import iwd as bus_iwd

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        objects = await bus_iwd.objects(bus)
        props = objects.get(station, {}).get(bus_iwd.STATION, {})
        network = objects.get(str(props.get("ConnectedNetwork", "")), {}).get(
            bus_iwd.NETWORK, {})
        if props.get("State") == "connected":
            return str(network.get("Name", "")).encode() == ssid
        if props.get("State") in ("disconnected", None):
            return False
        await asyncio.sleep(0.2)
    return False


def iwd_logged_reason(host: Host, since: float) -> str | None:
    """What iwd's journal says of the attempt that began at `since` (wall-clock
    seconds); None when the journal cannot be read or does not say."""
    # iwd logged the attempt's end before it answered the connect, but journald may not
    # have stored those lines yet; a journald that cannot be asked is read as it is.
    with contextlib.suppress(ZsnError):
        journal.synchronize(host)
    try:
        lines = journal.unit_lines(host, "iwd.service", lines=200)
    except ZsnError:
        return None
    first = int((since - 1.0) * 1_000_000)
    return iwd_reason([line.message for line in lines if line.timestamp_us >= first])


def iwd_plan(host: Host, interface: WlanInterface, ssid: bytes, hidden: bool,
             request: EapRequest, title: str) -> Plan:
    from zsn.system import iwd as bus_iwd

    name = display(ssid)
    copies = certs.copy_plan(host, f"iwd-{_stem(ssid)}", request)
    text, intent = eap_iwd.rendered(request, copies.paths, hidden=hidden)
    system_path = iwd_backend.profile_path(ssid, "8021x")
    path = host.path(system_path)
    previous = read_tracked(path) if files.exists(path) else None
    steps: list[Step] = [*copies.edits, FileEdit(path, previous, text, PRIVATE_FILE_MODE,
                                                   private_dir=True, intent=intent)]

    def run() -> None:
        async def act(bus: SystemBus) -> None:
            objects = await bus_iwd.objects(bus)
            station = iwd_backend.station_of(objects, interface.name)
            found = iwd_backend.find_network(objects, station, ssid)
            try:
                if found is not None:
                    await bus_iwd.connect(bus, network=found[0], station=station,
                                          hidden_ssid=None, passphrase=None)
                elif hidden:
                    await bus_iwd.connect_hidden(bus, station=station, ssid=ssid,
                                                 passphrase=None)
                else:
                    raise ZsnError(f"iwd does not see {name} on {interface.name} (scan again)")
            except bus_iwd.ConnectError as exc:
                if (exc.name or "").endswith((".InProgress", ".Busy")) and \
                        await _joined_by_itself(bus, station, ssid):
                    return  # iwd saw the new profile and connected on its own
                if (exc.name or "").endswith(".NotConfigured"):
                    raise ZsnError(f"{name}: iwd refused the profile (a certificate or key "
                                   "it cannot load; 'journalctl -u iwd' names it)") from None
                if (exc.name or "").endswith(".Failed"):
                    reason = iwd_logged_reason(host, started)
                    raise ZsnError(f"{name}: 802.1X failed: {reason}" if reason else
                                   f"{name}: {IWD_FAILED}; 'journalctl -u iwd' has its "
                                   "reason") from None
                raise ZsnError(f"{name}: {exc}") from None
        started = time.time()
        run_sync(host, act, timeout=10.0, deadline=bus_iwd.CONNECT_TIMEOUT + 20.0)

    steps.append(LiveStep(f"iwd on {interface.name}: connect to {name} ({_what(request)}), "
                          "wait for iwd's answer", run, restore=None))
    warnings = []
    if request.client_key and not files.exists(host.path(PKCS8_MODULE)):
        warnings.append("iwd loads the client key through the kernel's pkcs8_key_parser "
                        "module, which is not loaded: modprobe pkcs8_key_parser (iwd's "
                        "modules-load.d entry loads it at boot)")
    return Plan(title, steps, warnings=warnings,
                notes=[f"iwd keeps the network in {system_path} (0600) and joins it again "
                       "by itself"])


def wpa_plan(host: Host, interface: WlanInterface, ssid: bytes, hidden: bool,
             request: EapRequest, title: str) -> Plan:
    name = display(ssid)
    copies = certs.copy_plan(host, f"wpa_supplicant-{interface.name}-{_stem(ssid)}", request)
    values = network_values(request, copies.paths, wired=False)
    if profile_of_values({value.key: value.text for value in values}) is None:
        raise ValidationError("the network block zsn made does not read back as 802.1X")
    notes: list[str] = []

    def run() -> None:
        result = asyncio.run(wpa.connect(
            control_socket(host, interface.name), interface.name, ssid, passphrase=None,
            security="enterprise", hidden=hidden, eap=values))
        notes.extend(result.notes)

    steps: list[Step] = [*copies.edits, LiveStep(
        f"wpa_supplicant on {interface.name}: add {name} ({_what(request)}), select it, "
        f"wait for 802.1X and COMPLETED ({wpa.CONNECT_TIMEOUT:g} s), SAVE_CONFIG", run,
        restore=None)]
    return Plan(title, steps, notes=notes)


def netctl_profile(interface: str, ssid: bytes, hidden: bool, request: EapRequest,
                   paths: eap_iwd.Files) -> str:
    """A netctl profile whose WPAConfigSection is the network block (netctl.profile(5):
    ``Security=wpa-configsection``), read back by zsn's netctl reader."""
    return netctl_profile_meant(interface, ssid, hidden, request, paths)[0]


def netctl_profile_meant(interface: str, ssid: bytes, hidden: bool, request: EapRequest,
                         paths: eap_iwd.Files) -> tuple[str, Intent]:
    """`netctl_profile`'s text and what it means (`zsn.meaning`, the bash assignments)."""
    essid = netctl.checked_ssid_text(ssid)
    ssid_line = f'ssid="{essid}"' if essid.isascii() and essid.isprintable() \
        else f"ssid={ssid.hex()}"
    section = [ssid_line, *(f"{value.key}={value.text}" for value in
                            network_values(request, paths, wired=False))]
    if hidden:
        section.append("scan_ssid=1")
    for line in section:
        one_line(line, "WPAConfigSection")
    lines = [f"Description={quote(netctl.DESCRIPTION)}", f"Interface={quote(interface)}",
             "Connection=wireless", "Security=wpa-configsection", f"ESSID={quote(essid)}",
             "IP=dhcp", "WPAConfigSection=(", *(f"    {quote(line)}" for line in section), ")"]
    text = "\n".join(lines) + "\n"
    meant: list[tuple[str, str]] = [
        ("Description", netctl.DESCRIPTION), ("Interface", interface),
        ("Connection", "wireless"), ("Security", "wpa-configsection"), ("ESSID", essid),
        ("IP", "dhcp"), ("WPAConfigSection", canonical(tuple(section)))]
    intent = Intent(BASH)
    intent.whole([("", meant)])
    profile = netctl.parse_profile("check", text)
    read = profile.eap
    wanted = profile_of_values({value.key: value.text for value in
                                network_values(request, paths, wired=False)})
    if read != wanted or profile.essid != ssid:
        raise ValidationError("the netctl profile zsn rendered does not read back as "
                              "requested; nothing was written")
    return text, intent


def netctl_edits(host: Host, interface: WlanInterface, ssid: bytes, hidden: bool,
                 request: EapRequest) -> tuple[str, list[Step]]:
    """The profile's name and the edits that write it (certificates, then the profile)."""
    existing = [p for p in netctl.read_profiles(host)[0]
                if p.interface == interface.name and p.essid == ssid and p.wireless]
    profile_name = existing[0].name if existing else netctl.profile_name_for(
        interface.name, ssid)
    copies = certs.copy_plan(host, f"netctl-{profile_name}", request)
    text, intent = netctl_profile_meant(interface.name, ssid, hidden, request, copies.paths)
    path = netctl.profile_dir(host) / profile_name
    previous = read_tracked(path) if existing else None
    if previous is None and files.exists(path):
        raise ValidationError(f"/etc/netctl/{profile_name} exists but is not a profile for "
                              f"{display(ssid)} on {interface.name}")
    return profile_name, [*copies.edits, FileEdit(path, previous, text, PRIVATE_FILE_MODE,
                                                  intent=intent)]
