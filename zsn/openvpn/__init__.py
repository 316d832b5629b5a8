"""OpenVPN connections run as systemd units: configs, live state, DNS hook, lint."""

from zsn.domains import CommandGroup, Domain

DOMAIN = Domain(
    name="openvpn",
    title="OpenVPN",
    export="zsn.openvpn.export",
    commands=(
        CommandGroup("vpn", "OpenVPN connections as systemd units: start, stop, enable, "
                     "DNS hook, import, lint", "zsn.openvpn.cli",
                     "vpn list|show|start|stop|restart|enable|disable|hook|import|management|"
                     "lint ..."),
    ),
    pane="zsn.tui.panes.openvpn:OpenVpnPane",
    lint="zsn.openvpn.lint",
)
