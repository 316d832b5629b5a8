"""The typed values every link config system is given (`zsn.meaning`): each backend's
renderer (networkd, ifupdown, netplan, netctl) checks what it writes with these."""

from __future__ import annotations

from zsn import values
from zsn.links.bonding import LACP_RATES, MODES, XMIT_HASH_POLICIES

LINK = values.INTERFACE
LINKS = values.listed(values.INTERFACE, " ")
"""Link names separated by spaces (networkd's Name= and VLAN=, ifupdown's bond-slaves)."""
BOND_MODE = values.one_of(*MODES)
HASH_POLICY = values.one_of(*XMIT_HASH_POLICIES)
LACP_RATE = values.one_of(*LACP_RATES)
MTU = values.integer(68, 65535)
VLAN_ID = values.integer(0, 4094)
MIIMON = values.integer(0, 2**31 - 1)
"""Milliseconds, as the bonding driver takes them."""
