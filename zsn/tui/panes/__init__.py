"""One pane per domain. `PANES` lists them in tab order: (id, title, module, class)."""

PANES: list[tuple[str, str, str, str]] = [
    ("wireguard", "WireGuard", "zsn.tui.panes.wireguard", "WireGuardPane"),
    ("openvpn", "OpenVPN", "zsn.tui.panes.openvpn", "OpenVpnPane"),
]
