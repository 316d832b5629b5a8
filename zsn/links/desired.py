"""The links' section of the desired-state file (`zsn.desired`, docs/state.md): bonds,
VLANs and bridges by name, and the MTU of any other link.

`plans` yields the plans `zsn link ...` makes (`zsn.links.actions`), checked against
the live links as each command checks them; a plan is made against the links as the
plans before it leave them (`zsn.links.desired_plans` keeps that view: a VLAN on a
bond the same file creates). What cannot be changed in place (a bond's mode, a VLAN's
parent or id, a bridge's spanning tree) is refused, naming what to do instead. ``exclusive: true``
deletes the bonds, VLANs and bridges the section does not name; ``persist: true``
writes each change into the persistent config too, as ``--persist`` does (in a try,
on confirm), and saves there a named link that runs as said but is not written yet.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from zsn.links.desired_spec import LinksSection

if TYPE_CHECKING:
    from zsn.plan import Plan
    from zsn.system.host import Host

ORDER = 10
"""First: tunnels and the rest run over links."""
SECTION = LinksSection


# The live links are read, and the plans made, by `zsn.links.desired_plans`: imported
# only when the file has a links section (its planning modules are a tenth of a
# second's imports).


def describe(host: Host) -> tuple[dict[str, Any], list[str]]:
    """Every bond, VLAN and bridge, and the MTU of the NICs and veths (not of a bond's
    members: theirs follows the bond). Under --root there is no kernel to read: none."""
    from zsn.links import desired_plans

    return desired_plans.describe(host)


def plans(host: Host, section: LinksSection) -> Iterator[Plan]:
    """The plans `zsn link ...` makes, that make the links as `section` says."""
    from zsn.links import desired_plans

    yield from desired_plans.plans(host, section)
