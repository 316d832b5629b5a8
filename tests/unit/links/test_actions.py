"""Plans for link changes, checked against the lab's captured links: the steps and
their order, every refusal's reason, the SSH session guard, undo after a failure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.unit.links.conftest import captured_session, captured_snapshot
from zsn.errors import SessionLinkError, ValidationError, ZsnError
from zsn.links import actions
from zsn.links.actions import Context, Options
from zsn.links.model import LinksSnapshot
from zsn.plan import ApplyError, FileEdit, LiveStep
from zsn.system import netlink
from zsn.system.host import Host
from zsn.wording import Phrase


class FakeNetlink:
    """Records link changes; the call numbered `fail_at` (1-based) fails."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.fail_at = fail_at

    def _record(self, *call: Any) -> None:
        self.calls.append(call)
        if self.fail_at is not None and len(self.calls) == self.fail_at:
            raise ZsnError(f"{call[0]} {call[1]}: device or resource busy")

    def install(self, monkeypatch: pytest.MonkeyPatch) -> FakeNetlink:
        monkeypatch.setattr(netlink, "create_link",
                            lambda name, kind, **a: self._record("create", name, kind, a))
        monkeypatch.setattr(netlink, "set_link", lambda name, **a: self._record("set", name, a))
        monkeypatch.setattr(netlink, "delete_link", lambda name: self._record("delete", name))
        monkeypatch.setattr(netlink, "add_address",
                            lambda name, cidr: self._record("address", name, cidr))
        return self


@pytest.fixture
def context(tmp_path: Path) -> Context:
    return Context(Host(tmp_path), captured_snapshot(), default_route=set())


def steps(plan: Any) -> list[str]:
    return [step.description for step in plan.steps]


def index_of(snapshot: LinksSnapshot, name: str) -> int:
    return snapshot.by_name()[name].index


# -- create ---------------------------------------------------------------------------


def test_bond_plan_creates_enslaves_in_order_and_warns(context: Context) -> None:
    plan = actions.plan_create_bond(context, "bond9", "balance-rr", ["vethbr-p"], mtu=9000)
    assert steps(plan) == [
        "create bond bond9 (balance-rr, miimon 100, mtu 9000)",
        "enslave vethbr-p to bond9 (down, master bond9, up)",
        "bring bond9 up",
    ]
    assert any("LINK004" in w for w in plan.warnings) and any("LINK001" in w
                                                              for w in plan.warnings)
    assert "live only" in plan.notes[-1]


@pytest.mark.parametrize(("members", "kwargs", "reason", "field"), [
    (["eth1x"], {}, "eth1x is already enslaved to rr0", "members"),
    (["lo"], {}, "lo is the loopback device", "members"),
    (["nosuch"], {}, "no interface named 'nosuch'", "members"),
    (["vethbr-p"], {"xmit_hash_policy": "layer3+4"}, "a hash policy applies to",
     "xmit_hash_policy"),
    (["vethbr-p"], {"xmit_hash_policy": "layer9"}, "xmit hash policy 'layer9' is not one of",
     "xmit_hash_policy"),
    (["vethbr-p"], {"lacp_rate": "fast"}, "the LACP rate applies to 802.3ad only",
     "lacp_rate"),
    (["vethbr-p"], {"mtu": 70000}, "MTU 70000 is outside 68-65535", "mtu"),
    (["vethbr-p"], {"miimon": 70000}, "miimon 70000 ms is outside", "miimon"),
    ([], {}, "needs at least one member", "members"),
])
def test_bond_refusals(context: Context, members: list[str], kwargs: dict[str, Any],
                       reason: str, field: str) -> None:
    """Each refusal says why, and names the input (the CLI's option, the form's field)."""
    with pytest.raises(ValidationError, match=reason) as refused:
        actions.plan_create_bond(context, "bond9", "balance-rr", members, **kwargs)
    assert refused.value.field == field
    assert "--" not in str(refused.value)  # the front ends name the option or field


def test_bond_name_rules(context: Context) -> None:
    with pytest.raises(ValidationError, match="is 16 bytes"):
        actions.plan_create_bond(context, "bond-with-a-long", "active-backup", ["vethbr-p"])
    with pytest.raises(ValidationError, match="contains '/'"):
        actions.plan_create_bond(context, "bo/nd", "active-backup", ["vethbr-p"])
    with pytest.raises(ValidationError, match="rr0 exists already"):
        actions.plan_create_bond(context, "rr0", "active-backup", ["vethbr-p"])


def test_member_with_addresses_carrying_the_default_route_is_refused(context: Context) -> None:
    context.default_route = {index_of(context.snapshot, "dum0")}
    with pytest.raises(ValidationError, match="dum0 is up with 192.0.2.1/24 and carries the "
                                              "default route"):
        actions.plan_create_bond(context, "bond9", "active-backup", ["dum0"])
    context.default_route = set()
    plan = actions.plan_create_bond(context, "bond9", "active-backup", ["dum0"])
    assert any("dum0's addresses (192.0.2.1/24) stop working" in w for w in plan.warnings)


def test_vlan_plans_and_refusals(context: Context) -> None:
    plan = actions.plan_create_vlan(context, "rr0.20", "rr0", 20, mtu=9000)
    assert steps(plan) == ["create vlan rr0.20 (on rr0, id 20, mtu 9000)", "bring rr0.20 up"]
    for args, reason, field in (
        (("rr0.11", "rr0", 10), "rr0 already has VLAN 10: rr0.10", "vlan_id"),
        (("ad0.5", "ad0", 5, 9000), "MTU 9000 is above ad0's 1500: raise ad0 first", "mtu"),
        (("eth1x.5", "eth1x", 5), "eth1x is a member of rr0: put the VLAN on rr0", "parent"),
        (("rr0.5000", "rr0", 5000), "VLAN id 5000 is outside 1-4094", "vlan_id"),
        (("rr0.0", "rr0", 0), "VLAN id 0 is outside 1-4094", "vlan_id"),
        (("x.5", "nosuch", 5), "no parent named 'nosuch'", "parent"),
        (("rr0", "ad0", 5), "rr0 exists already", "name"),
    ):
        mtu = args[3] if len(args) > 3 else None
        with pytest.raises(ValidationError, match=reason) as refused:
            actions.plan_create_vlan(context, args[0], args[1], args[2], mtu=mtu)
        assert refused.value.field == field, reason


def test_bridge_plan_adds_ports(context: Context) -> None:
    plan = actions.plan_create_bridge(context, "br9", ["vethbr-p", "dum0"], stp=True)
    assert steps(plan) == ["create bridge br9 (stp on)", "add port vethbr-p to br9",
                           "add port dum0 to br9", "bring br9 up"]


# -- MTU ------------------------------------------------------------------------------


def test_lowering_a_bond_lowers_its_vlan_first(context: Context) -> None:
    plan = actions.plan_set_mtu(context, "rr0", 1500)
    assert steps(plan) == ["lower rr0.10 MTU 9000 -> 1500", "lower rr0 MTU 9000 -> 1500"]


def test_raising_touches_only_the_bond(context: Context) -> None:
    assert steps(actions.plan_set_mtu(context, "ad0", 9000)) == ["raise ad0 MTU 1500 -> 9000"]


@pytest.mark.parametrize(("name", "mtu", "reason"), [
    ("eth3x", 9000, "eth3x is a member of ad0: set ad0's MTU"),
    ("rr0.10", 9500, "MTU 9500 is above rr0's 9000: raise rr0 first"),
    ("rr0", 67, "outside 68-65535"),
])
def test_mtu_refusals(context: Context, name: str, mtu: int, reason: str) -> None:
    with pytest.raises(ValidationError, match=reason):
        actions.plan_set_mtu(context, name, mtu)


# -- members, delete ------------------------------------------------------------------


def test_members_and_ports(context: Context) -> None:
    assert steps(actions.plan_add_member(context, "br0", "vethbr-p")) == [
        "add port vethbr-p to br0"]
    assert steps(actions.plan_add_member(context, "ab0", "vethbr-p")) == [
        "enslave vethbr-p to ab0 (down, master ab0, up)"]
    assert steps(actions.plan_remove_member(context, "ab0", "eth7x")) == [
        "release eth7x from ab0"]
    with pytest.raises(ValidationError, match="eth1x is not a member of ad0"):
        actions.plan_remove_member(context, "ad0", "eth1x")
    with pytest.raises(ValidationError, match="dum0 is a dummy, not a bond or bridge"):
        actions.plan_add_member(context, "dum0", "vethbr-p")
    plan = actions.plan_remove_member(context, "adnp", "eth5x")
    assert any("left without members" in w for w in plan.warnings)


def test_delete(context: Context) -> None:
    assert steps(actions.plan_delete(context, "ab0")) == [
        "release eth6x from ab0", "release eth7x from ab0", "delete bond ab0"]
    assert steps(actions.plan_delete(context, "rr0.10")) == ["delete vlan rr0.10"]
    with pytest.raises(ValidationError, match="rr0 has VLAN rr0.10 on it: delete it first"):
        actions.plan_delete(context, "rr0")
    with pytest.raises(ValidationError, match="dum0 is a dummy: zsn deletes only bonds"):
        actions.plan_delete(context, "dum0")
    plan = actions.plan_delete(context, "ad0")
    assert any("10.0.20.1/24" in w for w in plan.warnings)


# -- the SSH session ------------------------------------------------------------------


def ssh_context(context: Context, monkeypatch: pytest.MonkeyPatch) -> Context:
    context.session = captured_session(monkeypatch, "rr0.10", "10.0.10.2 51000 10.0.10.1 22")
    return context


def test_touching_the_session_link_needs_its_name(context: Context,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    context = ssh_context(context, monkeypatch)
    assert context.session is not None and context.session.link == "rr0.10"
    with pytest.raises(SessionLinkError) as refused:
        actions.plan_remove_member(context, "rr0", "eth2x")
    assert refused.value.link == "rr0.10" and refused.value.touched == ["rr0", "eth2x"]
    assert str(refused.value).endswith("which could cut the session off")  # the front
    # ends say how to confirm: the CLI its flag, the pane a dialog asking for the name
    with pytest.raises(SessionLinkError):
        actions.plan_set_mtu(context, "rr0", 1500, Options(confirm_ssh="rr0"))
    plan = actions.plan_set_mtu(context, "rr0", 1500, Options(confirm_ssh="rr0.10"))
    assert len(plan.steps) == 2
    # Links the session does not run over need no confirmation.
    actions.plan_set_mtu(context, "ad0", 9000)
    actions.plan_create_vlan(context, "rr0.30", "rr0", 30)


# -- applying, and undo after a failure -------------------------------------------------


def test_a_failure_part_way_undoes_what_was_done(context: Context,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeNetlink(fail_at=6).install(monkeypatch)  # the second member's "master"
    plan = actions.plan_create_bond(context, "bond9", "active-backup", ["vethbr-p", "dum0"])
    with pytest.raises(ApplyError) as failed:
        plan.apply()
    assert fake.calls == [
        ("create", "bond9", "bond", {"bond_mode": 1, "bond_miimon": 100}),
        ("set", "vethbr-p", {"state": "down"}), ("set", "vethbr-p", {"master": "bond9"}),
        ("set", "vethbr-p", {"state": "up"}),
        ("set", "dum0", {"state": "down"}), ("set", "dum0", {"master": "bond9"}),  # fails
        ("set", "vethbr-p", {"master": None}), ("set", "vethbr-p", {"state": "up"}),
        ("delete", "bond9"),
    ]
    assert "undone: enslave vethbr-p to bond9" in str(failed.value)


def test_deleting_a_bond_undoes_by_recreating_it(context: Context,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeNetlink(fail_at=5).install(monkeypatch)  # the bond's own deletion
    plan = actions.plan_delete(context, "ab0")
    with pytest.raises(ApplyError):
        plan.apply()
    assert fake.calls[4] == ("delete", "ab0")
    assert fake.calls[5:] == [  # eth7x, then eth6x back into ab0
        ("set", "eth7x", {"state": "down"}), ("set", "eth7x", {"master": "ab0"}),
        ("set", "eth7x", {"state": "up"}),
        ("set", "eth6x", {"state": "down"}), ("set", "eth6x", {"master": "ab0"}),
        ("set", "eth6x", {"state": "up"}),
    ]


def test_undo_of_a_deletion_recreates_settings_and_addresses(context: Context,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    fake = FakeNetlink().install(monkeypatch)
    plan = actions.plan_delete(context, "ad0")
    plan.steps.append(LiveStep("fails", lambda: (_ for _ in ()).throw(ZsnError("boom"))))
    with pytest.raises(ApplyError):
        plan.apply()
    recreate = fake.calls.index(("create", "ad0", "bond", {
        "bond_mode": 4, "bond_miimon": 100, "bond_xmit_hash_policy": 1,
        "bond_ad_lacp_rate": 1, "mtu": 1500}))
    assert ("address", "ad0", "10.0.20.1/24") in fake.calls[recreate:]
    assert ("address", "ad0", "fd00:20::1/64") in fake.calls[recreate:]


# -- persistence ------------------------------------------------------------------------


def test_persist_appends_the_config_edit_after_the_live_steps(
        context: Context, tmp_path: Path) -> None:
    (tmp_path / "etc/netplan").mkdir(parents=True)
    (tmp_path / "etc/netplan/01.yaml").write_text("network:\n  version: 2\n")
    plan = actions.plan_create_vlan(context, "ad0.7", "ad0", 7, options=Options(persist=True))
    assert [type(s) for s in plan.steps] == [LiveStep, LiveStep, FileEdit]
    only_config = actions.plan_create_vlan(context, "ad0.7", "ad0", 7,
                                           options=Options(config_only=True))
    assert [type(s) for s in only_config.steps] == [FileEdit]
    assert "config only: no live link is touched" in only_config.notes


def test_an_offline_root_needs_config_only(tmp_path: Path) -> None:
    offline = Context(Host(tmp_path), LinksSnapshot((), 0.0, live=False))
    with pytest.raises(ValidationError, match=r"edit its config only \(--config-only\)") as no:
        actions.plan_create_bridge(offline, "br9", [])
    phrase = no.value.args[0]  # the pane names its key for the same choice
    assert isinstance(phrase, Phrase)
    assert "edit its config only (key p)" in phrase.worded(lambda action: {
        actions.PERSIST_KEY: "key p"}[action.name])


def test_save_writes_the_live_link(context: Context, tmp_path: Path) -> None:
    (tmp_path / "etc/netplan").mkdir(parents=True)
    (tmp_path / "etc/netplan/01.yaml").write_text("network:\n  version: 2\n")
    plan = actions.plan_save(context, "rr0")
    assert len(plan.steps) == 1
    text = plan.steps[0].new_text  # type: ignore[union-attr]
    assert "interfaces: [eth1x, eth2x]" in text and "mtu: 9000" in text
    assert "mode: balance-rr" in text
