"""Planning a send: which snapshots go, in which streams, and whether zsn may send them.

`plan_send` reads both sides (the source here, the target here or over SSH, each in one
batch), then `decide` works out the streams from those reads alone:

- A partial receive on the target (its ``receive_resume_token``) is resumed first, with
  ``zfs send -t``, once the token has been read back on the source: it must name a
  snapshot of the source, and a raw send stays raw (a target could drop ``rawok`` from
  a token to be sent plaintext: openzfs/zfs#14153).
- A new target gets the source's snapshots up to the one sent: the oldest in full, the
  rest as one ``-I`` stream (``-R`` for a tree: one stream holds it all). An existing
  target goes on from the newest snapshot both sides have, matched by guid (names may
  differ), with ``-I``.
- What ZFS would refuse, zsn refuses first and says why: no common snapshot, a target
  changed since it (``written``), snapshots on the target the source lacks, a tree
  whose datasets lack the snapshot, an encrypted tree without ``--raw``, raw onto plain.
  zsn never passes ``receive -F``: nothing on the target is rolled back or destroyed.

Every receive is resumable (``-s``) and unmounted (``-u``: a received copy never mounts
over anything, and stays unchanged for the next incremental); a tree is received with
``-x mountpoint`` (its mountpoints would be the source's own).
"""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from zsn.errors import ParseError, ValidationError, ZsnError
from zsn.format import human_bytes
from zsn.plan import LiveStep, Plan
from zsn.system.commands import CommandResult
from zsn.system.host import Host
from zsn.zfs import snapshots as snaps
from zsn.zfs.listing import parse_text_rows
from zsn.zfs.remote import Endpoint
from zsn.zfs.snapshots import Snapshot

VIA = ("ssh", "tcp")
SOURCE_PROPERTIES = ("type", "encryption", "keystatus")
TARGET_PROPERTIES = ("type", "encryption", "written", "receive_resume_token")
ESTIMATE_TIMEOUT = 120.0
_TOKEN_LINE_RE = re.compile(r"^\t(\w+) = (.*)$")


class SendRequest(NamedTuple):
    """What the user asked for (`zsn zfs send` or the TUI's form)."""

    source: str
    """``pool/ds`` or ``pool/ds@snap``."""
    target: str
    """``pool/ds`` or ``[user@]host:pool/ds``."""
    via: str = "ssh"
    raw: bool = False
    recursive: bool = False
    limit: float | None = None
    """Bytes per second."""


class Tree(NamedTuple):
    """One side's datasets: the top and, for a recursive send, its descendants, by name
    relative to the top (``""`` for the top, ``"/child"``)."""

    top: str
    properties: dict[str, dict[str, str]]
    snapshots: dict[str, list[Snapshot]]

    def relative(self, name: str) -> str:
        return name[len(self.top):]

    def get(self, relative: str, prop: str) -> str:
        return self.properties.get(relative, {}).get(prop, "-")

    def snapshot(self, relative: str, guid: int) -> Snapshot | None:
        return next((s for s in self.snapshots.get(relative, ()) if s.guid == guid), None)


class Token(NamedTuple):
    """A partial receive on the target, read back with ``zfs send -nvP -t`` here."""

    dataset: str
    """The target dataset that holds it."""
    token: str
    fields: dict[str, str]
    """``toname``, ``toguid``, ``fromguid``, ``rawok`` ... as ZFS prints them."""
    remaining: int | None
    """The bytes left to send (ZFS's estimate)."""

    @property
    def toname(self) -> str:
        return self.fields.get("toname", "")

    @property
    def raw(self) -> bool:
        return self.fields.get("rawok") == "1"

    @property
    def toguid(self) -> int | None:
        value = self.fields.get("toguid", "")
        try:
            return int(value, 16) if value.startswith("0x") else int(value)
        except ValueError:
            return None


class Stream(NamedTuple):
    """One ``zfs send ... | zfs receive ...``."""

    kind: str
    """``resume``, ``full`` or ``incremental``."""
    send_args: tuple[str, ...]
    """What follows ``zfs send``."""
    receive_args: tuple[str, ...]
    """What follows ``zfs receive``; the dataset is last."""
    delivers: tuple[str, ...]
    """The snapshots it brings (their names on the source)."""
    estimate: int | None = None

    @property
    def receive_dataset(self) -> str:
        return self.receive_args[-1]

    def describe(self, target: Endpoint) -> str:
        send = " ".join(_shown(a) for a in self.send_args)
        where = f"on {target.host}: " if target.remote else ""
        size = f" ({human_bytes(self.estimate)})" if self.estimate is not None else ""
        return f"zfs send {send} | {where}zfs receive {' '.join(self.receive_args)}{size}"


def _shown(argument: str) -> str:
    if argument.startswith("1-") and len(argument) > 40:  # a resume token
        return argument[:24] + "…"
    return argument


class Decision(NamedTuple):
    """What `decide` found: the streams to run (none when the target is up to date)."""

    snapshot: str
    """The snapshot the target ends at (its name after ``@``)."""
    streams: tuple[Stream, ...]
    common: str | None = None
    """The newest snapshot both sides had, if any."""
    up_to_date: bool = False
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    encrypted: bool = False
    """Every dataset sent is encrypted and the send is raw: the stream is ciphertext."""

    @property
    def estimate(self) -> int | None:
        sizes = [s.estimate for s in self.streams]
        return None if any(size is None for size in sizes) else sum(s or 0 for s in sizes)


# -- reading a side ------------------------------------------------------------------
def reads(zfs: str, zpool: str, dataset: str, recursive: bool, *,
          target: bool) -> dict[str, list[str]]:
    """The commands that read one side: its datasets' properties and its snapshots (the
    target also its parent, which a new target needs, and its pool's features)."""
    props = TARGET_PROPERTIES if target else SOURCE_PROPERTIES
    depth = ["-r"] if recursive else []
    jobs = {
        "datasets": [zfs, "get", "-Hp", "-o", "name,property,value", "-t", "filesystem,volume",
                     *depth, ",".join(props), dataset],
        "snapshots": snaps.list_argv(zfs, dataset, recursive),
    }
    if target:
        parent = dataset.rpartition("/")[0]
        if parent:
            jobs["parent"] = [zfs, "get", "-Hp", "-o", "name,property,value", "type", parent]
        jobs["features"] = [zpool, "get", "-Hp", "-o", "name,property,value",
                            "feature@extensible_dataset", dataset.split("/", 1)[0]]
    return jobs


def _missing(result: CommandResult) -> bool:
    return not result.ok and "dataset does not exist" in result.stderr + result.stdout


def parse_properties(text: str) -> dict[str, dict[str, str]]:
    """``zfs get -Hp -o name,property,value``: name -> property -> value."""
    found: dict[str, dict[str, str]] = {}
    for row in parse_text_rows(text, ("name", "property", "value"), "zfs get"):
        found.setdefault(row["name"], {})[row["property"]] = row["value"]
    return found


def read_tree(dataset: str, results: Mapping[str, CommandResult], where: str) -> Tree | None:
    """A side's tree from its `reads`; None when the dataset does not exist there."""
    datasets = results["datasets"]
    if _missing(datasets):
        return None
    for key in ("datasets", "snapshots"):
        if not results[key].ok:
            raise ZsnError(f"zfs {results[key].argv[1]} {where} failed: "
                           f"{results[key].first_error_line()}")
    properties = parse_properties(datasets.stdout)
    if dataset not in properties:
        raise ZsnError(f"zfs get {where} did not list {dataset}")
    tree = Tree(dataset, {}, {})
    for name, values in properties.items():
        if name == dataset or name.startswith(dataset + "/"):
            tree.properties[tree.relative(name)] = values
    for name, found in snaps.by_dataset(snaps.parse(results["snapshots"].stdout)).items():
        if name == dataset or name.startswith(dataset + "/"):
            tree.snapshots[tree.relative(name)] = found
    return tree


def parse_token(dataset: str, token: str, result: CommandResult) -> Token:
    """``zfs send -nvP -t TOKEN``: the token's fields and the bytes left, or why the
    partial receive cannot be resumed."""
    if not result.ok:
        reason = result.first_error_line()
        fields = _token_fields(result.stdout)
        what = fields.get("toname") or "a snapshot"
        if "no longer exists" in reason or "no longer the same" in reason:
            raise ValidationError(
                f"{dataset} holds a partial receive of {what}, which the source no longer "
                f"has ({reason}); 'zfs receive -A {dataset}' drops the partial state "
                "(zsn never does that by itself)")
        raise ZsnError(f"the partial receive on {dataset} cannot be resumed: {reason}")
    return Token(dataset, token, _token_fields(result.stdout), _size_line(result.stdout))


def _token_fields(text: str) -> dict[str, str]:
    fields = {}
    for line in text.splitlines():
        match = _TOKEN_LINE_RE.match(line)
        if match:
            fields[match.group(1)] = match.group(2).strip()
    return fields


def _size_line(text: str) -> int | None:
    for line in reversed(text.splitlines()):
        if line.startswith("size\t"):
            value = line.split("\t", 1)[1].strip()
            return int(value) if value.isdigit() else None
    return None


def parse_estimate(result: CommandResult) -> int:
    """The total of ``zfs send -nvP``."""
    if not result.ok:
        raise ZsnError(f"zfs send -nvP failed: {result.first_error_line()}")
    size = _size_line(result.stdout)
    if size is None:
        raise ParseError("zfs send -nvP printed no size line")
    return size


# -- deciding ------------------------------------------------------------------------------
def decide(source: Tree, target: Tree | None, target_name: str, *, snapshot: str | None,
           recursive: bool, raw: bool, tokens: Sequence[Token] = (),
           resumable: bool = True) -> Decision:
    """The streams that bring `target` up to `source`'s snapshot (see the module doc).
    Refusals are `ValidationError`s that say what is wrong and what would fix it."""
    notes: list[str] = []
    warnings: list[str] = []
    top = source.snapshots.get("", [])
    chosen = _chosen(source, top, snapshot)
    encrypted = [r for r in source.properties if source.get(r, "encryption") not in ("off", "-")]
    all_encrypted = bool(encrypted) and len(encrypted) == len(source.properties)
    _check_encryption(source, target, target_name, encrypted, recursive, raw, warnings)
    receive = ["-s", "-u"] if resumable else ["-u"]
    if not resumable:
        warnings.append("the target pool lacks feature@extensible_dataset: an interrupted "
                        "send cannot be resumed, it starts again")
    if recursive:
        receive += ["-x", "mountpoint"]
    flags = ["-w"] if raw else []
    streams: list[Stream] = []
    if target is not None and tokens:
        target, resumed = _resume(source, target, target_name, tokens, recursive, raw,
                                  receive)
        streams += resumed
        notes.append("resumes the interrupted send first (the target kept what arrived)")
    if recursive:
        lacking = [source.top + r for r in sorted(source.properties)
                   if not any(s.name == chosen.name for s in source.snapshots.get(r, ()))]
        if lacking:
            raise ValidationError(f"{', '.join(lacking[:4])} "
                                  f"{'has' if len(lacking) == 1 else 'have'} no snapshot "
                                  f"@{chosen.name}: a recursive send needs it on every "
                                  f"dataset (take it with zsn zfs snapshot -r "
                                  f"{source.top}@NAME)")
    common: Snapshot | None = None
    if target is None:
        first = top[0] if not recursive else chosen
        if recursive:
            streams.append(Stream("full", (*flags, "-R", chosen.full_name),
                                  (*receive, target_name), _tree_snapshots(source, chosen)))
        else:
            streams.append(Stream("full", (*flags, first.full_name), (*receive, target_name),
                                  (first.full_name,)))
            if first.guid != chosen.guid:
                streams.append(_incremental(source, first, chosen, flags, receive,
                                            target_name, recursive=False))
        notes.append(f"{target_name} does not exist yet: it is created")
    else:
        common = _common(source, target, target_name, recursive)
        if common.createtxg > chosen.createtxg:
            raise ValidationError(f"{target_name} has @{common.name}, newer than "
                                  f"@{chosen.name}: nothing older can be sent on top of it")
        if _complete(source, target, chosen, recursive):
            if not streams:
                return Decision(chosen.name, (), common.name, True,
                                (f"{target_name} is up to date: it has @{chosen.name}",),
                                tuple(warnings), raw and all_encrypted)
        else:
            if common.guid == chosen.guid:  # a tree whose new datasets lack it
                common = _common(source, target, target_name, recursive, before=chosen)
            _check_unchanged(source, target, target_name, recursive)
            streams.append(_incremental(source, common, chosen, flags, receive, target_name,
                                        recursive=recursive))
            notes.append(f"goes on from @{common.name}, the newest snapshot both sides have")
    if raw and not encrypted:
        notes.append("--raw of data that is not encrypted sends the blocks as stored "
                     "(compressed): like -Lec")
    return Decision(chosen.name, tuple(streams), common.name if common else None, False,
                    tuple(notes), tuple(warnings), raw and all_encrypted)


def _chosen(source: Tree, top: list[Snapshot], snapshot: str | None) -> Snapshot:
    if not top:
        raise ValidationError(f"{source.top} has no snapshot to send: take one first "
                              f"(zsn zfs snapshot {source.top}@NAME)")
    if snapshot is None:
        return top[-1]
    found = next((s for s in top if s.name == snapshot), None)
    if found is None:
        known = ", ".join("@" + s.name for s in top[-5:])
        raise ValidationError(f"{source.top} has no snapshot @{snapshot} (newest: {known})")
    return found


def _check_encryption(source: Tree, target: Tree | None, target_name: str,
                      encrypted: list[str], recursive: bool, raw: bool,
                      warnings: list[str]) -> None:
    if encrypted and not raw:
        names = ", ".join(source.top + r for r in encrypted[:3])
        if recursive:
            raise ValidationError(f"{names} {'is' if len(encrypted) == 1 else 'are'} "
                                  "encrypted: a recursive send of encrypted datasets must be "
                                  "raw (--raw; the target then stores them encrypted, "
                                  "without the key)")
        if source.get("", "keystatus") != "available":
            raise ValidationError(f"{source.top} is encrypted and its key is not loaded: "
                                  "only a raw send (--raw) can send it")
        warnings.append(f"{source.top} is encrypted: without --raw it is sent decrypted, "
                        "and the target stores it in plain unless its parent is encrypted")
        if target is not None and target.get("", "encryption") not in ("off", "-"):
            raise ValidationError(f"{target_name} is encrypted (received raw before): go on "
                                  "with --raw")
    if raw and encrypted and target is not None and \
            target.get("", "encryption") in ("off", "-"):
        raise ValidationError(f"{target_name} exists and is not encrypted: ZFS cannot "
                              "receive a raw encrypted stream on top of it")


def _resume(source: Tree, target: Tree, target_name: str, tokens: Sequence[Token],
            recursive: bool, raw: bool,
            receive: list[str]) -> tuple[Tree, list[Stream]]:
    """The resume streams, and the target as it will be once they ran."""
    streams = []
    for token in tokens:
        dataset, _, name = token.toname.partition("@")
        relative = source.relative(dataset)
        inside = dataset == source.top or (recursive and dataset.startswith(source.top + "/"))
        if not inside or not name:
            raise ValidationError(f"{token.dataset} holds a partial receive of "
                                  f"{token.toname or 'another stream'}, not of {source.top}: "
                                  "send to another target, or drop it with 'zfs receive -A "
                                  f"{token.dataset}'")
        if raw and not token.raw and source.get(relative, "encryption") not in ("off", "-"):
            raise ValidationError(f"the partial receive on {token.dataset} is not raw, but "
                                  "this send is: zsn does not resume an encrypted dataset's "
                                  "send without raw (a changed token could reveal the data)")
        if token.raw and not raw:
            raise ValidationError(f"the interrupted send into {token.dataset} was raw: go "
                                  "on with --raw")
        streams.append(Stream("resume", ("-t", token.token),
                              (*[a for a in receive if a not in ("-x", "mountpoint")],
                               token.dataset), (token.toname,), token.remaining))
        guid = token.toguid
        found = source.snapshot(relative, guid) if guid is not None else None
        if found is not None:
            rel = target.relative(token.dataset)
            target.snapshots.setdefault(rel, []).append(found._replace(
                dataset=token.dataset, createtxg=1 << 62))
            target.properties.setdefault(rel, {})["written"] = "0"
    return target, streams


def _common(source: Tree, target: Tree, target_name: str, recursive: bool,
            before: Snapshot | None = None) -> Snapshot:
    """The newest snapshot of the top that the target has (every dataset of the tree
    that exists there, for a recursive send), by guid; older than `before` if given."""
    for candidate in reversed(source.snapshots.get("", [])):
        if before is not None and candidate.createtxg >= before.createtxg:
            continue
        if target.snapshot("", candidate.guid) is None:
            continue
        if recursive and not _everywhere(source, target, candidate.name):
            continue
        _check_newest(source, target, target_name, recursive)
        return candidate
    have = ", ".join("@" + s.name for s in target.snapshots.get("", [])[-3:]) or "none"
    if before is not None:
        raise ValidationError(f"{target_name} has @{before.name} but some datasets of the "
                              f"tree do not, and no older snapshot is common to all: send "
                              "those datasets on their own")
    raise ValidationError(f"{target_name} exists but has no snapshot in common with "
                          f"{source.top} (its snapshots: {have}); zsn does not overwrite it: "
                          "send to a new dataset, or destroy this one yourself")


def _everywhere(source: Tree, target: Tree, name: str) -> bool:
    """Every dataset of the tree that the target has holds the source's @name."""
    for relative in target.properties:
        mine = next((s for s in source.snapshots.get(relative, ()) if s.name == name), None)
        if relative in source.properties and (mine is None or
                                              not target.snapshot(relative, mine.guid)):
            return False
    return True


def _check_newest(source: Tree, target: Tree, target_name: str, recursive: bool) -> None:
    """A target's newest snapshot must be one the source has: ZFS would need -F (which
    destroys the others) to go on otherwise."""
    for relative, found in target.snapshots.items():
        if not found or (relative and not recursive):
            continue
        newest = found[-1]
        if source.snapshot(relative, newest.guid) is None:
            raise ValidationError(f"{target_name + relative} has @{newest.name}, which "
                                  f"{source.top + relative} does not: an incremental receive "
                                  "would have to destroy it (zfs receive -F); zsn does not")


def _check_unchanged(source: Tree, target: Tree, target_name: str, recursive: bool) -> None:
    for relative, values in target.properties.items():
        if relative and not recursive or relative not in source.properties:
            continue
        written = values.get("written", "0")
        if written.isdigit() and int(written) > 0:
            raise ValidationError(
                f"{target_name + relative} was changed since its newest snapshot "
                f"({human_bytes(int(written))} written): ZFS refuses an incremental on top; "
                f"'zfs rollback {target_name + relative}@SNAPSHOT' drops the changes (zsn "
                "never does that by itself)")


def _complete(source: Tree, target: Tree, chosen: Snapshot, recursive: bool) -> bool:
    relatives = source.properties if recursive else {"": {}}
    for relative in relatives:
        mine = next((s for s in source.snapshots.get(relative, ()) if s.name == chosen.name),
                    None)
        if mine is None or target.snapshot(relative, mine.guid) is None:
            return False
    return True


def _tree_snapshots(source: Tree, chosen: Snapshot) -> tuple[str, ...]:
    return tuple(s.full_name for found in source.snapshots.values() for s in found
                 if s.createtxg <= chosen.createtxg)


def _incremental(source: Tree, base: Snapshot, chosen: Snapshot, flags: list[str],
                 receive: list[str], target_name: str, *, recursive: bool) -> Stream:
    brought = tuple(s.full_name for s in source.snapshots.get("", [])
                    if base.createtxg < s.createtxg <= chosen.createtxg)
    return Stream("incremental", (*flags, *(["-R"] if recursive else []), "-I",
                                  "@" + base.name, chosen.full_name),
                  (*receive, target_name), brought)


# -- the whole plan: both sides read, the decision, estimates, the transport ----------------
_RATE_RE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgt]?)(i?b|bit|)(?:/s)?\s*", re.IGNORECASE)


MAX_RATE = float(1 << 50)
"""The fastest ``--limit`` taken (1 PiB/s): more is a typo, or infinity."""


def parse_rate(text: str) -> float:
    """``--limit``: bytes per second as ``50M``, ``50MiB/s``, ``800K``, ``1.5G`` (binary,
    as mbuffer and pv take them), or bits as ``100Mbit`` (decimal, as links are sold)."""
    match = _RATE_RE.fullmatch(text)
    if match is None:
        raise ValidationError(f"{text[:40]!r} is not a rate: write e.g. 50M (MiB/s), 800K or "
                              "100Mbit")
    number, prefix, unit = float(match.group(1)), match.group(2).lower(), match.group(3).lower()
    power = "kmgt".find(prefix) + 1 if prefix else 0
    rate = float(number * 1000 ** power / 8 if unit == "bit" else number * 1024 ** power)
    if rate < 1024:
        raise ValidationError(f"{text[:40]!r} is below 1 KiB/s: too slow to be meant")
    if rate > MAX_RATE:
        raise ValidationError(f"{text[:40]!r} is above 1 PiB/s: too fast to be meant")
    return rate


class SendPlan(NamedTuple):
    """A send as zsn will run it, from a fresh read of both sides."""

    request: SendRequest
    source: str
    """The source dataset."""
    target: Endpoint
    decision: Decision
    ssh: Any = None
    """The `zsn.zfs.remote.Ssh` of a remote target."""
    route: str | None = None
    """For ``--via tcp``: the interface the stream leaves through."""
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def transport(self) -> str:
        return "local" if not self.target.remote else self.request.via

    @property
    def title(self) -> str:
        return f"send {self.source}@{self.decision.snapshot} to {self.target}"

    def plan(self) -> Plan:
        """The plan as `--dry-run` prints it and the TUI shows it."""
        plan = Plan(self.title, warnings=[*self.decision.warnings, *self.warnings])
        for stream in self.decision.streams:
            plan.steps.append(LiveStep(stream.describe(self.target), _not_from_a_plan))
        estimate = self.decision.estimate
        if self.decision.streams:
            count = sum(len(s.delivers) for s in self.decision.streams)
            plan.notes.append(f"{count} snapshot{'s' if count != 1 else ''}, "
                              + (f"about {human_bytes(estimate)} (zfs send -nvP)"
                                 if estimate is not None else "size unknown"))
        plan.notes += [*self.decision.notes, *self.notes]
        return plan


def _not_from_a_plan() -> None:
    raise ZsnError("a send runs through zsn.zfs.transfer, not Plan.apply")


Runner = Callable[[Sequence[str]], CommandResult]


def _local_run(argv: Sequence[str]) -> CommandResult:
    from zsn.zfs.live import run_zfs_command

    return run_zfs_command(argv, timeout=ESTIMATE_TIMEOUT)


def plan_send(host: Host, request: SendRequest, *, run: Runner = _local_run,
              connect: Callable[[Endpoint], Any] | None = None) -> SendPlan:
    """Read both sides and decide (see the module doc); a `ValidationError` for what the
    user should change, a `ZsnError` when a side could not be read."""
    from zsn.zfs import remote
    from zsn.zfs.live import require_program, run_side_by_side

    if request.via not in VIA:
        raise ValidationError(f"{request.via[:20]!r}: say ssh or tcp", field="via")
    dataset, snapshot = remote.parse_source(request.source)
    target = remote.parse_target(request.target)
    if not target.remote and (target.dataset == dataset or
                              target.dataset.startswith(dataset + "/")):
        raise ValidationError(f"{target.dataset} is {dataset} itself or inside it: send to "
                              "another dataset")
    if request.via == "tcp" and not target.remote:
        raise ValidationError("tcp is for a target on another host", field="via")
    zfs, zpool = require_program("zfs"), require_program("zpool")
    ssh = (connect or remote.connect)(target) if target.remote else None
    target_side = remote.Side(target, ssh)
    source_jobs = reads(zfs, zpool, dataset, request.recursive, target=False)
    target_jobs = reads(target_side.zfs, target_side.zpool, target.dataset,
                        request.recursive, target=True)
    both: dict[str, Any] = {}

    def read_target() -> None:
        try:
            both["target"] = target_side.run_batch(target_jobs)
        except ZsnError as exc:
            both["target"] = exc

    reader = threading.Thread(target=read_target, daemon=True)
    reader.start()
    source_results = {key: run(argv) for key, argv in source_jobs.items()}
    reader.join()
    if isinstance(both["target"], ZsnError):
        raise both["target"]
    target_results: dict[str, CommandResult] = both["target"]
    source_tree = read_tree(dataset, source_results, "here")
    if source_tree is None:
        raise ValidationError(f"no filesystem or volume named {dataset!r} here")
    target_tree = read_tree(target.dataset, target_results, target_side.where)
    if target_tree is None and "parent" in target_results and \
            _missing(target_results["parent"]):
        parent = target.dataset.rpartition("/")[0]
        raise ValidationError(f"{parent} does not exist {target_side.where}: ZFS creates "
                              f"{target.dataset} but not its parent (create it first)")
    features = target_results["features"]
    resumable = features.ok and any(line.split("\t")[-1] in ("active", "enabled")
                                    for line in features.stdout.splitlines())
    tokens = []
    for relative, values in (target_tree.properties.items() if target_tree else ()):
        token = values.get("receive_resume_token", "-")
        if token not in ("-", ""):
            held = target.dataset + relative
            tokens.append(parse_token(held, token, run([zfs, "send", "-nvP", "-t", token])))
    decision = decide(source_tree, target_tree, target.dataset, snapshot=snapshot,
                      recursive=request.recursive, raw=request.raw, tokens=tokens,
                      resumable=resumable)
    jobs = {str(i): [zfs, "send", "-nvP", *s.send_args]
            for i, s in enumerate(decision.streams) if s.kind != "resume"}
    estimates = run_side_by_side(jobs, run)
    streams = []
    for i, stream in enumerate(decision.streams):
        result = estimates.get(str(i))
        if isinstance(result, CommandResult):
            stream = stream._replace(estimate=parse_estimate(result))
        elif isinstance(result, ZsnError):
            raise result
        streams.append(stream)
    decision = decision._replace(streams=tuple(streams))
    notes: list[str] = []
    warnings: list[str] = []
    route = None
    if target.remote and request.via == "tcp":
        route = _check_tcp(host, target, ssh, decision, warnings)
        notes.append(f"via tcp: zsn's receiver on {target.host} takes the stream on a TCP "
                     "port it opens for this send (Python 3 is needed there)")
    elif target.remote and ssh is not None:
        notes.append(f"via ssh to {target.destination}, ciphers offered fastest first: "
                     + ", ".join(ssh.ciphers[:3]))
    if request.limit:
        notes.append(f"limited to {human_bytes(request.limit)}/s")
    return SendPlan(request, dataset, target, decision, ssh, route, tuple(notes),
                    tuple(warnings))


def target_address(host_name: str) -> str:
    """The address the name resolves to here (the first one, as a connect would use)."""
    try:
        found = socket.getaddrinfo(host_name, None, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise ZsnError(f"{host_name} does not resolve: {exc}") from exc
    return str(found[0][4][0])


def wireguard_interface(host: Host, address: str) -> tuple[str | None, bool]:
    """The interface the kernel routes `address` through, and whether it is a WireGuard
    interface (kernel or wireguard-go)."""
    from zsn.system import rtnetlink
    from zsn.system.files import exists

    index = rtnetlink.route_interface(address.split("%")[0])
    link = next((found for found in rtnetlink.read_links() if found.index == index), None)
    if link is None:
        return None, False
    # wireguard-go's link is a plain tun; its UAPI socket (where wireguard-go puts it,
    # /run/wireguard or /var/run/wireguard) is what says it is WireGuard
    userspace = any(exists(host.path(f"{folder}/{link.name}.sock"))
                    for folder in ("/run/wireguard", "/var/run/wireguard"))
    return link.name, link.kind == "wireguard" or userspace


def tcp_refusal(address: str, interface: str | None) -> ValidationError:
    return ValidationError(
        f"tcp sends the stream unencrypted: zsn allows it for a raw send of an "
        f"encrypted dataset (--raw), or through a WireGuard interface; {address} is "
        f"reached through {interface or 'no interface'}, which is not WireGuard (use "
        "--via ssh)", field="via")


def _check_tcp(host: Host, target: Endpoint, ssh: Any, decision: Decision,
               warnings: list[str]) -> str | None:
    if decision.encrypted:
        warnings.append("the stream is encrypted, but dataset and snapshot names, properties "
                        "and sizes cross the network in plain")
        return None
    from zsn.zfs.remote import ssh_config

    name = ssh_config(ssh.program, target.destination).get("hostname", target.host or "")
    address = target_address(name)
    interface, wireguard = wireguard_interface(host, address)
    if not wireguard:
        raise tcp_refusal(address, interface)
    return interface
