"""Wi-Fi: scan, connect, known networks and start at boot, through iwd, wpa_supplicant or
netctl; NetworkManager's interfaces shown read-only."""

from zsn.domains import CommandGroup, Domain

DOMAIN = Domain(
    name="wlan",
    title="WLAN",
    export="zsn.wlan.export",
    commands=(
        CommandGroup("wifi", "Wi-Fi through iwd, wpa_supplicant or netctl: scan, connect, "
                     "forget, autoconnect, QR codes, lint", "zsn.wlan.cli",
                     "wifi list|scan|connect|disconnect|forget|autoconnect|qr|lint ..."),
    ),
    pane="zsn.tui.panes.wlan:WlanPane",
    lint="zsn.wlan.lint",
)
