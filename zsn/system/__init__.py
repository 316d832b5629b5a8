"""The one boundary where zsn touches the machine: paths, programs, files, netlink, D-Bus."""
