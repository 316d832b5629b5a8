"""WireGuard: live state (UAPI, generic netlink), wg-quick config files, snapshots."""

from zsn.domains import CommandGroup, Domain

DOMAIN = Domain(
    name="wireguard",
    title="WireGuard",
    export="zsn.wireguard.export",
    commands=(
        CommandGroup("peer", "add, remove, show, disable, enable, rename WireGuard peers; "
                     "their history", "zsn.wireguard.cli:peer",
                     "peer add|remove|show|disable|enable|rename|routes|log|expire IFACE NAME ..."),
        CommandGroup("wg", "create WireGuard interfaces, bring them up/down, routing, access "
                     "rules, lint, record history", "zsn.wireguard.cli:wg",
                     "wg create|up|down|endpoint|clients|link|gateway|acl|lint|record|import ..."),
    ),
    pane="zsn.tui.panes.wireguard:WireGuardPane",
    lint="zsn.wireguard.lint",
    live="zsn.wireguard.live:read_wireguard",
    on_poll="zsn.wireguard.recorder:on_poll",
    desired="zsn.wireguard.desired",
)
