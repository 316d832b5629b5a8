"""Planning a send from what OpenZFS 2.1 answered to zsn's own reads of both sides, in
each state a target can be in (tests/fixtures/zfs-send-lab, second run): the streams,
the newest common snapshot, resumes, and every refusal; then `zsn zfs send --dry-run`
end to end against fake programs replaying the same captures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.unit.zfs.conftest import FIXTURES, FakeZfs, read
from tests.unit.zfs.test_cli_export import zsn
from zsn.errors import ValidationError
from zsn.system.commands import CommandResult
from zsn.zfs import send
from zsn.zfs.send import Tree, decide, parse_token, read_tree

SEND = FIXTURES / "zfs-send-lab"


def result(name: str, argv: tuple[str, ...] = ("zfs",)) -> CommandResult:
    def part(suffix: str) -> str:
        path = SEND / f"{name}.{suffix}"
        return path.read_text() if path.exists() else ""

    return CommandResult(argv, int(part("rc") or 0), part("out"), part("err"), 0.0)


def source(name: str, dataset: str) -> Tree:
    tree = read_tree(dataset, {"datasets": result(f"{name}.source-get"),
                               "snapshots": result(f"{name}.source-snapshots")}, "here")
    assert tree is not None
    return tree


def target(name: str, dataset: str) -> Tree | None:
    return read_tree(dataset, {"datasets": result(f"{name}.target-get"),
                               "snapshots": result(f"{name}.target-snapshots")}, "there")


def streams(decision: send.Decision) -> list[str]:
    return [" ".join(s.send_args) + " > " + " ".join(s.receive_args)
            for s in decision.streams]


def test_a_new_target_gets_the_oldest_in_full_then_the_rest() -> None:
    assert target("new", "dst/data") is None
    decision = decide(source("data", "src/data"), None, "dst/data", snapshot=None,
                      recursive=False, raw=False)
    assert streams(decision) == ["src/data@a > -s -u dst/data",
                                 "-I @a src/data@c > -s -u dst/data"]
    assert decision.snapshot == "c" and decision.common is None
    assert decision.streams[1].delivers == ("src/data@b", "src/data@c")


def test_an_existing_target_goes_on_from_the_newest_common_snapshot() -> None:
    decision = decide(source("data", "src/data"), target("incremental", "dst/data"),
                      "dst/data", snapshot=None, recursive=False, raw=False)
    assert streams(decision) == ["-I @b src/data@c > -s -u dst/data"]
    assert decision.common == "b"
    up_to_date = decide(source("data", "src/data"), target("incremental", "dst/data"),
                        "dst/data", snapshot="b", recursive=False, raw=False)
    assert up_to_date.up_to_date and up_to_date.streams == ()
    with pytest.raises(ValidationError, match="has @b, newer than @a"):
        decide(source("data", "src/data"), target("incremental", "dst/data"), "dst/data",
               snapshot="a", recursive=False, raw=False)
    with pytest.raises(ValidationError, match=re.escape("no snapshot @z (newest: @a, @b, @c)")):
        decide(source("data", "src/data"), None, "dst/data", snapshot="z", recursive=False,
               raw=False)


@pytest.mark.parametrize(("state", "reason"), [
    ("changed", "dst/data was changed since its newest snapshot (64.0 KiB written)"),
    ("extra-snapshot", "dst/data has @local-only, which src/data does not"),
    ("no-common", "dst/data exists but has no snapshot in common with src/data (its "
                  "snapshots: @x)"),
])
def test_what_zfs_would_refuse_is_refused_first(state: str, reason: str) -> None:
    dataset = "dst/other" if state == "no-common" else "dst/data"
    with pytest.raises(ValidationError, match=re.escape(reason.replace("dst/data", dataset))):
        decide(source("data", "src/data"), target(state, dataset), dataset,
               snapshot=None, recursive=False, raw=False)


def test_a_tree_up_to_date_and_a_tree_whose_children_are_new() -> None:
    tree = source("tree", "src/data")
    assert set(tree.properties) == {"", "/child"}
    done = decide(tree, target("tree-up-to-date", "dst/tree"), "dst/tree", snapshot=None,
                  recursive=True, raw=False)
    assert done.up_to_date
    new = decide(tree, None, "dst/tree", snapshot=None, recursive=True, raw=False)
    assert streams(new) == ["-R src/data@c > -s -u -x mountpoint dst/tree"]
    top_only = decide(tree, target("tree-top-only", "dst/half2"), "dst/half2", snapshot=None,
                      recursive=True, raw=False)
    assert streams(top_only) == ["-R -I @a src/data@c > -s -u -x mountpoint dst/half2"]


def test_encrypted_sources() -> None:
    secret = source("secret", "src/secret")
    plain = decide(secret, None, "dst/copy", snapshot=None, recursive=False, raw=False)
    assert any("sent decrypted" in w for w in plain.warnings) and not plain.encrypted
    raw = decide(secret, None, "dst/copy", snapshot=None, recursive=False, raw=True)
    assert streams(raw) == ["-w src/secret@s1 > -s -u dst/copy"] and raw.encrypted
    assert decide(secret, target("secret-raw", "dst/secret"), "dst/secret", snapshot=None,
                  recursive=False, raw=True).up_to_date
    with pytest.raises(ValidationError, match="received raw before\\): go on with --raw"):
        decide(secret, target("secret-raw", "dst/secret"), "dst/secret", snapshot=None,
               recursive=False, raw=False)
    with pytest.raises(ValidationError, match="must be raw"):
        decide(secret, None, "dst/copy", snapshot=None, recursive=True, raw=False)
    with pytest.raises(ValidationError, match="cannot receive a raw encrypted stream on top"):
        decide(secret, target("incremental", "dst/data"), "dst/data", snapshot=None,
               recursive=False, raw=True)


def test_a_partial_full_receive_is_resumed_and_completes_the_target() -> None:
    partial = target("partial-full", "dst/part")
    assert partial is not None and partial.get("", "receive_resume_token").startswith("1-")
    token = parse_token("dst/part", partial.get("", "receive_resume_token"),
                        result("token.partial-full"))
    assert token.toname == "src/data@c" and token.remaining == 9718984 and not token.raw
    decision = decide(source("data", "src/data"), partial, "dst/part", snapshot=None,
                      recursive=False, raw=False, tokens=[token])
    assert [s.kind for s in decision.streams] == ["resume"]
    assert decision.streams[0].send_args == ("-t", token.token)
    assert decision.streams[0].receive_args == ("-s", "-u", "dst/part")
    with pytest.raises(ValidationError, match="was raw: go on with --raw"):
        decide(source("data", "src/data"), target("partial-full", "dst/part"), "dst/part",
               snapshot=None, recursive=False, raw=False,
               tokens=[token._replace(fields={**token.fields, "rawok": "1"})])


def test_a_partial_incremental_receive_is_resumed_then_up_to_date() -> None:
    partial = target("partial-incremental", "dst/inc")
    assert partial is not None
    token = parse_token("dst/inc", partial.get("", "receive_resume_token"),
                        result("token.partial-incremental"))
    assert token.toname == "src/data/child@d" and token.fields["fromguid"].startswith("0x")
    decision = decide(source("child", "src/data/child"), partial, "dst/inc", snapshot=None,
                      recursive=False, raw=False, tokens=[token])
    assert [s.kind for s in decision.streams] == ["resume"]
    with pytest.raises(ValidationError, match="not of src/data:"):
        decide(source("data", "src/data"), target("partial-incremental", "dst/inc"),
               "dst/inc", snapshot=None, recursive=False, raw=False, tokens=[token])


def test_a_token_whose_snapshot_is_gone_names_the_command_that_drops_it() -> None:
    with pytest.raises(ValidationError, match=re.escape(
            "dst/inc holds a partial receive of src/data/child@d, which the source no longer "
            "has (cannot resume send: 'src/data/child@d' used in the initial send no longer "
            "exists); 'zfs receive -A dst/inc' drops")):
        parse_token("dst/inc", "1-x", result("send-nvP-t.gone"))


def test_estimates() -> None:
    assert send.parse_estimate(result("estimate.intermediate")) == 4238304
    assert send.parse_estimate(result("estimate.raw")) == 3225520


# -- zsn zfs send --dry-run against fake programs ------------------------------------------
GET = "zfs get -Hp -o name,property,value -t filesystem,volume"
LIST = ("zfs list -Hp -t snapshot -o name,guid,createtxg,creation,used,referenced,userrefs "
        "-s createtxg")


def answer(fake: FakeZfs, command: str, name: str) -> None:
    found = result(name)
    fake.answer(command, found.stdout, found.stderr, found.returncode)


def both_sides(fake: FakeZfs, state: str, target_dataset: str = "dst/data") -> None:
    answer(fake, f"{GET} type,encryption,keystatus src/data", "data.source-get")
    answer(fake, f"{LIST} src/data", "data.source-snapshots")
    answer(fake, f"{GET} type,encryption,written,receive_resume_token {target_dataset}",
           f"{state}.target-get")
    answer(fake, f"{LIST} {target_dataset}", f"{state}.target-snapshots")
    answer(fake, f"zfs get -Hp -o name,property,value type {target_dataset.rsplit('/', 1)[0]}",
           f"{state}.target-parent")
    answer(fake, "zpool get -Hp -o name,property,value feature@extensible_dataset dst",
           f"{state}.target-features")


def test_dry_run_of_a_new_target(fake_zfs: FakeZfs) -> None:
    both_sides(fake_zfs, "new")
    answer(fake_zfs, "zfs send -nvP src/data@a", "estimate.full")
    answer(fake_zfs, "zfs send -nvP -I @a src/data@c", "estimate.intermediate")
    planned = zsn(fake_zfs, "zfs", "send", "src/data", "dst/data", "--dry-run")
    assert planned.returncode == 0, planned.stderr
    assert planned.stdout.splitlines() == [
        "Plan: send src/data@c to dst/data",
        "  1. zfs send src/data@a | zfs receive -s -u dst/data (8.1 MiB)",
        "  2. zfs send -I @a src/data@c | zfs receive -s -u dst/data (4.0 MiB)",
        "  note: 3 snapshots, about 12.1 MiB (zfs send -nvP)",
        "  note: dst/data does not exist yet: it is created"]
    assert not any(c["argv"][:1] == ["receive"] or c["argv"][:2] == ["send", "src/data@a"]
                   for c in fake_zfs.calls())


def test_dry_run_refusals_are_one_line_and_exit_2(fake_zfs: FakeZfs) -> None:
    both_sides(fake_zfs, "changed")
    refused = zsn(fake_zfs, "zfs", "send", "src/data", "dst/data", "--dry-run")
    assert refused.returncode == 2
    assert refused.stderr.startswith("zsn zfs: invalid: dst/data was changed since its newest "
                                     "snapshot (64.0 KiB written)")
    both_sides(fake_zfs, "new-parent-missing", "dst/nosuch/data")
    missing = zsn(fake_zfs, "zfs", "send", "src/data", "dst/nosuch/data", "--dry-run")
    assert (missing.returncode, missing.stderr.strip()) == (
        2, "zsn zfs: invalid: dst/nosuch does not exist here: ZFS creates dst/nosuch/data but "
           "not its parent (create it first)")
    tcp = zsn(fake_zfs, "zfs", "send", "src/data", "dst/data", "--via", "tcp")
    assert (tcp.returncode, tcp.stderr.strip()) == (
        2, "zsn zfs: invalid: --via: tcp is for a target on another host")
    into_itself = zsn(fake_zfs, "zfs", "send", "src/data", "src/data/copy")
    assert into_itself.returncode == 2 and "itself or inside it" in into_itself.stderr
    bad_limit = zsn(fake_zfs, "zfs", "send", "src/data", "dst/data", "--limit", "fast")
    assert bad_limit.returncode == 2 and "not a rate" in bad_limit.stderr


def test_dry_run_of_an_up_to_date_target(fake_zfs: FakeZfs, tmp_path: Path) -> None:
    both_sides(fake_zfs, "incremental")
    planned = zsn(fake_zfs, "zfs", "send", "src/data@b", "dst/data", "--dry-run")
    assert planned.stdout.splitlines() == ["Plan: send src/data@b to dst/data",
                                           "  (nothing to change)",
                                           "  note: dst/data is up to date: it has @b"]
    sent = zsn(fake_zfs, "zfs", "send", "src/data@b", "dst/data")
    assert sent.returncode == 0 and "dst/data is up to date (src/data@b)" in sent.stderr
    assert read(fake_zfs.root / "var/lib/zsn/transfers" / next(iter(
        p.name for p in (fake_zfs.root / "var/lib/zsn/transfers").iterdir()))).count(
            '"state":"ok"') == 1


# -- a whole send, the bytes from a fake zfs send into a fake zfs receive -------------------
def streams_of(fake: FakeZfs, chunks: int, receive_rc: int = 0, receive_err: str = "") -> int:
    both_sides(fake, "new")
    answer(fake, "zfs send -nvP src/data@a", "estimate.full")
    answer(fake, "zfs send -nvP -I @a src/data@c", "estimate.intermediate")
    chunk = "z" * 65536
    fake.answer("zfs send src/data@a", stream=[chunk] * chunks, every=0.01)
    fake.answer("zfs send -I @a src/data@c", stream=[chunk] * 2)
    fake.answer("zfs receive -s -u dst/data", stderr=receive_err, rc=receive_rc, drain=True)
    return (chunks + 2) * len(chunk)


def test_a_send_moves_every_byte_and_records_its_result(fake_zfs: FakeZfs) -> None:
    import json

    total = streams_of(fake_zfs, 40)
    sent = zsn(fake_zfs, "zfs", "send", "src/data", "dst/data", "--json")
    assert sent.returncode == 0, sent.stderr
    result = json.loads(sent.stdout)
    assert result["bytes"] == total and result["state"] == "ok" and result["via"] == "local"
    assert result["snapshot"] == "src/data@c" and result["streams"] == 2
    received = Path(str(fake_zfs.script) + ".received").read_text().split()
    assert [int(n) for n in received] == [40 * 65536, 2 * 65536]
    # Off a terminal, plain "progress: ..." lines come between these, as time goes.
    lines = [line for line in sent.stderr.splitlines() if not line.startswith("progress: ")]
    assert lines[0] == "stream 1: zfs send src/data@a | zfs receive -s -u dst/data (8.1 MiB)"
    assert lines[1].startswith("stream 2: zfs send -I @a src/data@c")
    assert lines[-1].startswith(f"sent {total / 2 ** 20:.1f} MiB in ") and \
        lines[-1].endswith("src/data@c is on dst/data")
    exported = json.loads(zsn(fake_zfs, "--export", "zfs").stdout)["zfs"]["transfers"]
    assert exported["running"] == [] and exported["last"][0]["bytes"] == total


def test_a_receiver_that_refuses_fails_the_send_with_its_words(fake_zfs: FakeZfs) -> None:
    import json

    streams_of(fake_zfs, 4, 1, read(SEND / "receive.full-exists.err"))
    sent = zsn(fake_zfs, "zfs", "send", "src/data", "dst/data", "--json")
    assert sent.returncode == 1
    assert sent.stderr.strip().splitlines()[-1] == (
        "zsn zfs send: error: zfs receive here failed: cannot receive new filesystem stream: "
        "destination 'dst/data' exists must specify -F to overwrite it")
    assert json.loads(sent.stdout)["state"] == "failed"
