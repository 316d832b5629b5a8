"""Network links: bonds, VLANs, bridges and veth pairs, live and persistent."""

from zsn.domains import CommandGroup, Domain

DOMAIN = Domain(
    name="links",
    title="Links",
    export="zsn.links.export",
    commands=(
        CommandGroup("link", "bonds, VLANs and bridges: list, show, create, set MTU, "
                     "members, delete, persist, 802.1X on a port, lint", "zsn.links.cli",
                     "link list|show|create|set|add-member|remove-member|delete|persist|"
                     "8021x|lint ..."),
    ),
    pane="zsn.tui.panes.links:LinksPane",
    lint="zsn.links.lint",
    desired="zsn.links.desired",
)
