"""Plans: every change zsn makes is first a list of steps that can be shown, then applied.

WireGuard and OpenVPN actions both build these. A step is a file edit (shown as
a diff, secrets masked) or a live operation (netlink, UAPI, D-Bus, a program run).
`Plan.apply` runs the steps in order; when one fails it undoes the finished ones
in reverse and raises `ApplyError`, which says what was done, what was undone and
what could not be.

A plan that can be tried (``--try``, `zsn.tries`) also says how to put things back
from another process: each live step's `LiveStep.restore` (or the plan's
`Plan.checkpoint`) is data a guardian can carry out after zsn has gone, and file
edits are restored from what they replaced. `Plan.touches` names the links whose
live state it changes, so the SSH session's path can be checked against it, and
`Plan.checks` re-read the live state after applying to tell whether it became what
the plan meant.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from zsn.errors import SessionLinkError, ZsnError
from zsn.meaning import CheckedBefore, Intent, OwnFile
from zsn.system import files

if TYPE_CHECKING:  # a plan carries undos as data; the changes build on plans
    from zsn.tries.undo import Undo

# Values that must never reach a diff, a log or a notification: WireGuard key lines
# and the bodies of OpenVPN's inline private-key blocks (<key>...</key> etc.).
_SECRET_LINE_RE = re.compile(r"^(\s*(?:#\[disabled\] )?(?:PrivateKey|PresharedKey)\s*=\s*)(\S+)",
                             re.IGNORECASE | re.MULTILINE)
SECRET_BLOCKS = ("key", "tls-auth", "tls-crypt", "tls-crypt-v2", "secret", "pkcs12",
                 "auth-user-pass", "http-proxy-user-pass")
# The closing tag keeps what stands before it on its line (a diff's "+", indentation);
# OpenVPN accepts spaces after the opening tag, so they must not let a block through.
_SECRET_BLOCK_RE = re.compile(
    r"(<(" + "|".join(SECRET_BLOCKS) + r")>[ \t]*\r?\n).*?(^[^\n]*?</\2>)",
    re.DOTALL | re.IGNORECASE | re.MULTILINE,
)


# Wi-Fi secrets: netctl's Key=, iwd's Passphrase= and 802.1X passwords
# (EAP-PEAP-Phase2-Password=, EAP-TLS-ClientKeyPassphrase= ...), wpa_supplicant's psk= and
# friends, also as a quoted line of netctl's WPAConfigSection ('password="..."'). The
# value may hold spaces (a quoted passphrase), so the rest of the line goes.
_WIFI_SECRET_LINE_RE = re.compile(
    r"^(\s*'?(?:Key|Passphrase|psk|sae_password|password|wep_key[0-3]|private_key_passwd"
    r"|EAP-[A-Za-z0-9-]*(?:Password|Passphrase))\s*=[ \t]*)(\S.*)$", re.MULTILINE)


def mask_secrets(text: str) -> str:
    """`text` with private keys replaced by "(hidden)", for diffs, logs and screens."""
    text = _WIFI_SECRET_LINE_RE.sub(r"\1(hidden)", _SECRET_LINE_RE.sub(r"\1(hidden)", text))
    return _SECRET_BLOCK_RE.sub(r"\1(hidden)\n\3", text)


class ApplyError(ZsnError):
    """Applying a plan failed part-way; the message lists what was done and undone."""

    def __init__(self, message: str, done: list[str], undone: list[str], stuck: list[str]):
        report = [message]
        if undone:
            report.append("undone: " + "; ".join(undone))
        if stuck:
            report.append("NOT undone (fix by hand): " + "; ".join(stuck))
        if done and not undone and not stuck:
            report.append("done before the failure: " + "; ".join(done))
        super().__init__("\n".join(report))
        self.done = done
        self.undone = undone
        self.stuck = stuck


@dataclass
class FileEdit:
    """A file written atomically, with its backup, refused if it changed since read.

    Its `intent` says what the new text means in the format of the program that reads
    it (`zsn.meaning`): the edit is refused when it is made (so the plan is refused,
    before anything is written) if the text read back means anything else.
    """

    path: Path
    previous: files.FileSnapshot | None = field(repr=False)
    """What the edit is based on; ``None`` creates a new file."""
    new_text: str = field(repr=False)
    """May hold private keys: never in a repr, shown only through `diff` (masked)."""
    mode: int | None = None
    private_dir: bool = False
    """Create the parent directory 0700 (it holds private keys)."""
    new_dir: bool = False
    """Create the parent directory (0755) when it is missing, e.g. a drop-in folder;
    undoing the edit removes it again."""
    shown_in_full: bool = True
    """False for files zsn ships (e.g. OpenVPN's DNS hook): the plan names them, no diff."""
    backup: bool = True
    """Keep the previous content as ``.zsn-bak`` (not for a leftover zsn replaces)."""
    remove: bool = False
    """Delete the file (`previous` must be set): it is kept as the ``.zsn-bak`` backup."""
    persistent: bool = False
    """The boot config of a live change (``--persist``): in a try it is written only
    when the change is confirmed, so a reboot before that boots the old config."""
    intent: Intent | OwnFile | CheckedBefore | None = field(kw_only=True, repr=False)
    """What the new text means (`zsn.meaning.Intent`, read back when the edit is made),
    `OwnFile` for a file no other program reads, `CheckedBefore` for a text read back
    when its plan was made; None only for a removal."""
    _old_backup: bytes | None = field(default=None, init=False, repr=False)
    _created_dirs: list[Path] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.intent is None and not self.remove:
            raise TypeError(f"{self.path}: a file edit says what it means (intent=)")
        if isinstance(self.intent, Intent) and not self.remove:
            self.intent.verify(self.previous.text if self.previous else "", self.new_text,
                               str(self.path), quote=mask_secrets)

    @property
    def description(self) -> str:
        if self.remove:
            return f"remove {self.path} (kept as {files.backup_path(self.path).name})"
        verb = "create" if self.previous is None else "edit"
        mode = f" (mode {self.mode:04o})" if self.mode is not None else ""
        return f"{verb} {self.path}{mode}"

    def diff(self) -> str:
        import difflib  # only plans that are shown need it; the export path never does

        before = self.previous.text if self.previous else ""
        after = "" if self.remove else self.new_text
        lines = difflib.unified_diff(
            mask_secrets(before).splitlines(keepends=True),
            mask_secrets(after).splitlines(keepends=True),
            fromfile=str(self.path) if self.previous else "/dev/null",
            tofile="/dev/null" if self.remove else str(self.path),
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)

    def apply(self) -> None:
        if self.private_dir or self.new_dir:
            missing = []
            directory = self.path.parent
            while not files.exists(directory):
                missing.append(directory)
                directory = directory.parent
            for created in reversed(missing):
                if self.private_dir:
                    files.ensure_private_dir(created)
                else:
                    files.make_dir(created, 0o755)
                self._created_dirs.append(created)
        backup = files.backup_path(files.write_target(self.path))
        self._old_backup = files.read_bytes(backup, files.MAX_FILE_BYTES) \
            if files.exists(backup) else None
        if self.remove:
            if self.previous is None:
                raise ZsnError(f"{self.path}: removing a file zsn did not read")
            files.remove_with_backup(self.path, previous=self.previous)
            return
        files.write_atomic(self.path, self.new_text, previous=self.previous, mode=self.mode,
                           backup=self.backup)

    def undo(self) -> None:
        if self.remove:
            assert self.previous is not None
            files.write_atomic(self.path, self.previous.text, previous=None,
                               mode=self.previous.mode, backup=False)
            self._restore_backup()
            return
        written = files.read_tracked(self.path)
        if self.previous is None:
            files.remove(files.write_target(self.path))
            for created in reversed(self._created_dirs):
                files.remove_folder(created)
            return
        files.write_atomic(self.path, self.previous.text, previous=written,
                           mode=self.previous.mode, backup=False)
        self._restore_backup()

    def _restore_backup(self) -> None:
        backup = files.backup_path(files.write_target(self.path))
        if self._old_backup is None:
            files.remove(backup, missing_ok=True)
        else:  # the backup holds the same secrets: atomic, its mode kept
            files.write_atomic(backup, self._old_backup, previous=files.read_tracked(backup),
                               backup=False)


@dataclass
class LiveStep:
    """A change to the running system, with how to undo it."""

    description: str
    run: Callable[[], object]
    undo_run: Callable[[], object] | None = None
    restore: tuple[Undo, ...] | None = None
    """How a try puts back what this step changes, as data another process can carry
    out (`zsn.tries.undo`); ``()`` when the plan's `Plan.checkpoint` covers it;
    ``None``: the step cannot be tried."""

    def apply(self) -> None:
        self.run()

    def undo(self) -> None:
        if self.undo_run is None:
            raise ZsnError("cannot be undone automatically")
        self.undo_run()


Step = FileEdit | LiveStep


@dataclass(frozen=True)
class Check:
    """One thing the plan means, read back from the live system after applying."""

    description: str
    differences: Callable[[], list[str]]
    """What differs from what the plan meant (empty: as meant); may raise `ZsnError`."""


@dataclass
class Plan:
    """A change as the user sees it before saying yes: its steps, warnings and notes."""

    title: str
    steps: list[Step] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """What may stop the change from working (e.g. a unit sandbox); shown before notes."""
    notes: list[str] = field(default_factory=list)
    """Things the user should know (e.g. "interface is down: takes effect at next up")."""
    output: str = field(default="", repr=False)
    """What the action produces for the user once applied (e.g. a client config)."""
    read_back: Callable[[], str] | None = field(default=None, repr=False)
    """Once applied: reads the changed thing again from the system and says what it was
    and what it is now ("was compression=lz4 (inherited from tank), now zstd (local)").
    The report shows that instead of the notes written before the change."""

    def notes_after(self) -> list[str]:
        """What the report says once the plan is applied: what `read_back` finds (or why
        it could not), else the notes. Blocking: call it where `apply` runs."""
        if self.read_back is None:
            return list(self.notes)
        try:
            return [self.read_back()]
        except ZsnError as exc:
            return [f"applied, but reading it back failed: {exc}"]
    touches: frozenset[str] = frozenset()
    """Links (interface names; ``tun*``: any name starting ``tun``, for a device the
    kernel numbers) whose live state the change alters: set against the SSH session's path
    (`zsn.tries.session`) before anything is applied."""
    reroutes: tuple[tuple[str, str], ...] = ()
    """(network, what the change does to it) for networks the change routes a new way
    (a tunnel's AllowedIPs, forwarding that drops learned default routes): the SSH
    session is at risk when its client lies in one, through a route no more specific."""
    checkpoint: list[Undo] = field(default_factory=list)
    """Restores of the whole live change, carried out before the steps' own."""
    checks: list[Check] = field(default_factory=list)
    """Verify after apply: what the live state must be once the plan is applied."""
    parts: list[str] = field(default_factory=list)
    """The titles of the plans a `combined` plan is made of, shown before its steps."""

    def describe(self, diffs: bool = True,
                 word: Callable[[str], str] | None = None) -> str:
        """The plan as text: `--dry-run` prints this, the TUI shows it before asking
        (`word` words its warnings and notes the TUI's way: `zsn.wording`)."""
        said = word or str
        out = [f"Plan: {self.title}"]
        out.extend(f"  - {part}" for part in self.parts)
        for number, step in enumerate(self.steps, start=1):
            out.append(f"  {number}. {step.description}")
        if not self.steps:
            out.append("  (nothing to change)")
        out.extend(f"  warning: {said(warning)}" for warning in self.warnings)
        out.extend(f"  note: {said(note)}" for note in self.notes)
        if diffs:
            for step in self.steps:
                if not isinstance(step, FileEdit):
                    continue
                out.append("")
                if step.shown_in_full:
                    out.append(step.diff().rstrip("\n"))
                else:
                    lines = len(step.new_text.splitlines())
                    out.append(f"{step.path}: zsn's own file, {lines} lines (not shown)")
        return "\n".join(out) + "\n"

    def apply(self) -> list[str]:
        """Run every step; on failure undo the finished ones and raise `ApplyError`."""
        done: list[Step] = []
        for step in self.steps:
            try:
                step.apply()
            except Exception as exc:
                undone: list[str] = []
                stuck: list[str] = []
                for finished in reversed(done):
                    try:
                        finished.undo()
                        undone.append(finished.description)
                    except Exception as undo_exc:  # noqa: BLE001 - report it, keep undoing
                        stuck.append(f"{finished.description} ({undo_exc})")
                raise ApplyError(f"{self.title}: failed at '{step.description}': {exc}",
                                 [s.description for s in done], undone, stuck) from exc
            done.append(step)
        return [step.description for step in done]


SessionPlan = Callable[[str | None], Plan]
"""Builds a plan that may touch the SSH session's link: called with None first, and
with the link once the user has named it (`LivePane.ask_session_link`)."""


class Planned(NamedTuple):
    """What a form's build made in its worker thread (the pane base's `plan_in_dialog`):
    a plan, or the question about the SSH session's link to ask once the form closed."""

    build: SessionPlan
    """How to plan again, with the session's link named."""
    outcome: Plan | SessionLinkError
    """The plan, or the question to ask once the form is closed."""


_COMBINED = CheckedBefore("as each plan combined was made: every edit of the file read "
                          "back against the text the one before left")


def combined(title: str, plans: list[Plan]) -> Plan:
    """One plan that does what `plans` do, in order, each built on the files the ones
    before it leave (`zsn.system.files.staged`): a file several of them edit is one
    edit, from what the first one read (so a file changed on disk meanwhile is still
    refused) to what the last one wrote, made where the first one was. An edit that
    ends where it began (created and removed, or back to the same text) is left out.
    Warnings, notes, checks, what they touch and reroute, and checkpoints add up."""
    from dataclasses import replace

    steps: list[Step] = []
    edits: dict[Path, int] = {}
    for plan in plans:
        for step in plan.steps:
            if not isinstance(step, FileEdit):
                steps.append(step)
                continue
            index = edits.get(step.path)
            if index is None:  # its intent was read back when its plan made it
                edits[step.path] = len(steps)
                steps.append(replace(step, intent=None if step.remove else _COMBINED))
                continue
            first = steps[index]
            assert isinstance(first, FileEdit)
            steps[index] = replace(
                first, new_text=step.new_text, remove=step.remove,
                mode=step.mode if step.mode is not None else first.mode,
                private_dir=first.private_dir or step.private_dir,
                new_dir=first.new_dir or step.new_dir,
                shown_in_full=first.shown_in_full and step.shown_in_full,
                persistent=first.persistent and step.persistent,
                intent=None if step.remove else _COMBINED)
    kept = [step for step in steps if not _unchanged(step)]
    result = Plan(title, kept, parts=[plan.title for plan in plans])
    for plan in plans:
        result.warnings.extend(w for w in plan.warnings if w not in result.warnings)
        result.notes.extend(n for n in plan.notes if n not in result.notes)
        result.checks.extend(plan.checks)
        result.checkpoint.extend(plan.checkpoint)
        result.touches |= plan.touches
        result.reroutes += tuple(r for r in plan.reroutes if r not in result.reroutes)
    return result


def _unchanged(step: Step) -> bool:
    """A combined file edit that changes nothing: created then removed, or the text
    (and mode) it read."""
    if not isinstance(step, FileEdit):
        return False
    if step.previous is None:
        return step.remove
    return (not step.remove and step.new_text == step.previous.text
            and step.mode in (None, step.previous.mode))
