"""ZFS: pools, vdev trees, scrubs, datasets and snapshots, live I/O from `zpool iostat`, an
advisor."""

from zsn.domains import CommandGroup, Domain

DOMAIN = Domain(
    name="zfs",
    title="ZFS",
    export="zsn.zfs.export",
    commands=(
        CommandGroup("zfs", "ZFS pools: health, vdevs, live I/O, scrubs, dataset properties, "
                     "snapshots, snapshot policies, replication, advisor, disks, scrub history",
                     "zsn.zfs.cli",
                     "zfs list|status|iostat|scrub|trim|set|clear|snapshots|snapshot|send|policy|"
                     "replicate|advise|disks|scrubs ..."),
    ),
    pane="zsn.tui.panes.zfs:ZfsPane",
    lint="zsn.zfs.lint",
    desired="zsn.zfs.desired",
)
