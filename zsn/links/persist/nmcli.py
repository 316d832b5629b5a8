"""NetworkManager owns the links: zsn writes no files behind its back, it shows the
nmcli commands that make the same change persistent (profiles NAME for the link,
NAME-port-MEMBER for each member or port)."""

from __future__ import annotations

import shlex

from zsn.links.persist import LinkConfig, Owner, PersistPlan, Remove, Upsert


def _nmcli(*words: str) -> str:
    return shlex.join(["nmcli", "connection", *words])


def bond_options(config: LinkConfig) -> str:
    return ",".join(f"{name}={value}" for name, value in config.bond_settings())


def port_commands(config: LinkConfig, member: str) -> list[str]:
    return [_nmcli("add", "type", "ethernet", "con-name", f"{config.name}-port-{member}",
                   "ifname", member, "master", config.name, "slave-type", config.kind)]


def commands_for(change: Upsert | Remove) -> list[str]:
    if isinstance(change, Remove):
        ports = change.before.members if change.before else ()
        return [_nmcli("delete", f"{change.name}-port-{m}") for m in ports] + [
            _nmcli("delete", change.name)]
    config = change.config
    old = change.before
    if old is None:
        words = ["add", "type", config.kind, "con-name", config.name, "ifname", config.name]
        if config.kind == "bond":
            words += ["bond.options", bond_options(config)]
        elif config.kind == "bridge":
            words += ["bridge.stp", "yes" if config.stp else "no"]
        elif config.kind == "vlan":
            words += ["vlan.parent", str(config.parent), "vlan.id", str(config.vlan_id)]
        if config.mtu is not None:
            words += ["ethernet.mtu", str(config.mtu)]
        words += ["ipv4.method", "disabled", "ipv6.method", "disabled"]
        result = [_nmcli(*words)]
        for member in config.members:
            result += port_commands(config, member)
        return result
    result = []
    if "mtu" in change.fields and config.mtu is not None:
        result.append(_nmcli("modify", config.name, "ethernet.mtu", str(config.mtu)))
    if "members" in change.fields:
        for member in config.members:
            if member not in old.members:
                result += port_commands(config, member)
        for member in old.members:
            if member not in config.members:
                result.append(_nmcli("delete", f"{config.name}-port-{member}"))
    settings = {"mode", "miimon", "xmit_hash_policy", "lacp_rate"} & change.fields
    if config.kind == "bond" and settings:
        result.append(_nmcli("modify", config.name, "bond.options", bond_options(config)))
    return result


def plan(changes: list[Upsert | Remove], owner: Owner) -> PersistPlan:
    result = PersistPlan("networkmanager")
    for change in changes:
        result.commands.extend(commands_for(change))
    result.warnings.append(
        f"{owner.reason}: zsn writes no config files behind its back. Make the change "
        "persistent with these nmcli commands (a profile that exists already must be "
        "changed with 'nmcli connection modify' instead):")
    return result
