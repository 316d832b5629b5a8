"""The one boundary where zsn touches the machine: paths, programs, files, netlink, D-Bus."""

from zsn.system.host import Host

__all__ = ["Host"]
