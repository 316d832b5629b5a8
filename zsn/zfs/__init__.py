"""ZFS: pools, vdev trees, scrubs and datasets, live I/O from `zpool iostat`, an advisor."""

from zsn.domains import CommandGroup, Domain

DOMAIN = Domain(
    name="zfs",
    title="ZFS",
    export="zsn.zfs.export",
    commands=(
        CommandGroup("zfs", "ZFS pools: health, vdevs, live I/O, scrubs, dataset properties, "
                     "advisor", "zsn.zfs.cli",
                     "zfs list|status|iostat|scrub|set|clear|advise ..."),
    ),
    pane="zsn.tui.panes.zfs:ZfsPane",
    lint="zsn.zfs.lint",
)
