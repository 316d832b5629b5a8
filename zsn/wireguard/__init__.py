"""WireGuard: live state (UAPI, generic netlink), wg-quick config files, snapshots."""
