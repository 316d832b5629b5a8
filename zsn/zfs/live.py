"""Reading ZFS's live state: `zpool`/`zfs` commands (no other API exists here) and kstats.

`read_zfs` runs `zpool list`, `zpool status` and `zfs list` side by side, in their
scripted forms: JSON where the installed OpenZFS has it (2.3+), ``-Hp`` text before
(2.1 in Debian 12), falling back to text when a ``-j`` is refused. Every command has a
deadline, runs with ``LC_ALL=C`` and gets an argv list. What cannot be read becomes a
plain reason: no kernel module and no program are "unavailable" (nothing to read);
a command that fails or is refused is an error (something exists but was not read).

`ZfsReader` is the pane's reader: between full reads (every few seconds, at once when
a pool's kstat state changes or a scan runs) it only reads the lock-free
``/proc/spl/kstat/zfs/POOL/state`` files, so an idle pane costs almost nothing.

Starting the commands needs little of zsn: the parsers, the model and the advisor are
imported by `Reading.finish`, while the commands run (`zsn --export zfs` spends about as
long loading them as zpool takes to answer, on a slow machine).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from zsn.errors import CommandError, ParseError, ValidationError, ZsnError
from zsn.system import commands, files
from zsn.system.host import Host
from zsn.zfs.names import DATASET_COLUMNS, POOL_COLUMNS, validate_pool_name

if TYPE_CHECKING:
    from zsn.zfs.facts import Facts
    from zsn.zfs.model import Pool, ZfsSnapshot

ENV = {"LC_ALL": "C"}
SBIN_DIRS = ("/usr/local/sbin", "/usr/sbin", "/sbin")
"""Where Debian installs zpool and zfs: not on a normal user's PATH."""
KSTAT_DIR = "/proc/spl/kstat/zfs"
MODULE_DIR = "/sys/module/zfs"
SYSFS_CAP = 4096
"""A sysfs attribute or a kstat's one-word state is at most a page."""
COMMAND_TIMEOUT = 15.0
MODULE_NOT_LOADED = ("the ZFS kernel module is not loaded (load it as root with "
                     "'modprobe zfs'; Debian: apt install zfs-dkms)")
NOT_INSTALLED = "{program} is not installed (Debian: apt install zfsutils-linux)"
NEED_ROOT = "zsn is not root: scrubs, property changes and clearing errors need root"


def find_program(name: str) -> str | None:
    """`name` on PATH, or in the sbin directories a normal user's PATH lacks."""
    path = os.environ.get("PATH", os.defpath)
    return shutil.which(name, path=os.pathsep.join([path, *SBIN_DIRS]))


def require_program(name: str) -> str:
    """`find_program`, or a `ZsnError` saying which package installs it."""
    found = find_program(name)
    if found is None:
        raise ZsnError(NOT_INSTALLED.format(program=name))
    return found


def module_loaded(host: Host) -> bool:
    return files.is_dir(host.path(MODULE_DIR)) or files.is_dir(host.path(KSTAT_DIR))


def kernel_version(host: Host) -> str | None:
    """The loaded module's version (``2.1.11-1+deb12u1``), read from sysfs: no command."""
    try:
        return files.read_text(host.path(f"{MODULE_DIR}/version"), SYSFS_CAP).strip() or None
    except (OSError, ZsnError):
        return None


def has_json(version: str | None) -> bool:
    """OpenZFS 2.3 added ``-j`` to zpool status/list and zfs list."""
    if not version:
        return False
    parts = version.split("-", 1)[0].split(".")
    try:
        return (int(parts[0]), int(parts[1])) >= (2, 3)
    except (ValueError, IndexError):
        return False


def kstat_states(host: Host) -> dict[str, str]:
    """Pool -> state from ``/proc/spl/kstat/zfs/POOL/state`` (lock-free, one word)."""
    states: dict[str, str] = {}
    try:
        entries = files.list_files(host.path(KSTAT_DIR))
    except (OSError, ZsnError):
        return states
    for entry in entries:
        try:
            if files.is_dir(entry):
                states[entry.name] = files.read_text(entry / "state", SYSFS_CAP).strip()
        except (OSError, ZsnError):
            continue
    return states


def explain_failure(result: commands.CommandResult) -> str:
    """One line saying why a zpool/zfs command failed, in the user's terms."""
    text = result.stderr + result.stdout
    program = os.path.basename(result.argv[0])
    if "modules are not loaded" in text or "modules cannot be auto-loaded" in text:
        return MODULE_NOT_LOADED
    if "Permission denied" in text or "permission denied" in text:
        return (f"{program} was refused access to /dev/zfs (permission denied): run zsn as "
                "root")
    return f"{program} {result.argv[1]} failed: {result.first_error_line()}"


Runner = Callable[[Sequence[str]], commands.CommandResult]


def run_zfs_command(argv: Sequence[str], *, timeout: float | None = None,
                    check: bool = False,
                    max_output: int = commands.DEFAULT_MAX_OUTPUT) -> commands.CommandResult:
    """`commands.run` with ``LC_ALL=C``; errors name the program, not its directory."""
    try:
        return commands.run(argv, timeout=timeout or COMMAND_TIMEOUT, check=check, env=ENV,
                            max_output=max_output)
    except CommandError as exc:
        raise CommandError(str(exc).replace(argv[0], os.path.basename(argv[0]), 1)) from exc


def _run(argv: Sequence[str]) -> commands.CommandResult:
    return run_zfs_command(argv)


def zfs_stdout(argv: Sequence[str]) -> str:
    """The output of `argv` (its program looked up by name), or a `ZsnError` saying why
    it failed."""
    result = run_zfs_command([require_program(argv[0]), *argv[1:]])
    if not result.ok:
        raise ZsnError(explain_failure(result))
    return result.stdout


class SideBySide:
    """Commands started at once, each in its own thread; `results` waits for them."""

    def __init__(self, jobs: Mapping[str, Sequence[str]], runner: Runner = _run) -> None:
        self._results: dict[str, commands.CommandResult | CommandError] = {}
        self._runner = runner
        self._threads = [threading.Thread(target=self._work, args=item, daemon=True)
                         for item in jobs.items()]
        for thread in self._threads:
            thread.start()

    def _work(self, key: str, argv: Sequence[str]) -> None:
        try:
            self._results[key] = self._runner(argv)
        except CommandError as exc:
            self._results[key] = exc

    def results(self) -> dict[str, commands.CommandResult | CommandError]:
        """The result or the `CommandError` per job (every command has a deadline)."""
        for thread in self._threads:
            thread.join()
        return self._results


def run_side_by_side(jobs: Mapping[str, Sequence[str]],
                     runner: Runner = _run) -> dict[str, commands.CommandResult | CommandError]:
    """Run each argv in its own thread; the result or the `CommandError` per job."""
    return SideBySide(jobs, runner).results()


def pool_commands(zpool: str, json: bool) -> dict[str, list[str]]:
    columns = ",".join(POOL_COLUMNS)
    if json:
        return {"list": [zpool, "list", "-j", "--json-int", "-o", columns],
                "status": [zpool, "status", "-j", "--json-int", "-P"]}
    return {"list": [zpool, "list", "-Hp", "-o", columns],
            "status": [zpool, "status", "-p", "-P"]}


def dataset_command(zfs: str, json: bool) -> list[str]:
    columns = ",".join(DATASET_COLUMNS)
    if json:
        return [zfs, "list", "-j", "--json-int", "-t", "filesystem,volume", "-o", columns]
    return [zfs, "list", "-Hp", "-t", "filesystem,volume", "-o", columns]


def _json_refused(result: commands.CommandResult | CommandError) -> bool:
    return isinstance(result, commands.CommandResult) and result.returncode == 2 and (
        "invalid option" in result.stderr or "unrecognized option" in result.stderr)


Outputs = dict[str, commands.CommandResult | CommandError]


def read_zfs(host: Host, *, datasets: bool = True, runner: Runner = _run,
             clock: Callable[[], float] = time.time) -> ZfsSnapshot:
    """Pools (health, sizes, vdev tree, scan) and, with `datasets`, every filesystem and
    volume: a snapshot that says why whatever is missing is missing."""
    return read_with(host, {}, datasets=datasets, runner=runner, clock=clock)[0]


def read_pools(host: Host, pool: str | None) -> tuple[ZfsSnapshot, list[Pool]]:
    """The pools a command about pools is asked for (`pool`, or all when None), read
    now: `pool` checked first, and an unavailable ZFS or an unread pool list refused."""
    if pool is not None:
        validate_pool_name(pool)
    snapshot = read_zfs(host, datasets=False)
    if snapshot.unavailable:
        raise ZsnError(f"ZFS is not available: {snapshot.unavailable}")
    if snapshot.errors and not snapshot.pools:
        raise ZsnError("; ".join(snapshot.errors))
    if pool is not None and snapshot.pool(pool) is None:
        known = ", ".join(p.name for p in snapshot.pools) or "none"
        raise ValidationError(f"no pool named {pool!r} (pools: {known})")
    return snapshot, [p for p in snapshot.pools if pool is None or p.name == pool]


def read_with(host: Host, extra: Callable[[str], Mapping[str, Sequence[str]]] | dict[str, Any],
              *, datasets: bool = True, runner: Runner = _run,
              clock: Callable[[], float] = time.time) -> tuple[ZfsSnapshot, Outputs]:
    """`read_zfs`, running the `extra` commands (made from zpool's path) side by side
    with zsn's own; their results come back as they are."""
    return start_reading(host, extra, datasets=datasets, runner=runner, clock=clock).finish()


class Reading:
    """zsn's commands (and the extra ones) under way; `finish` waits for them and
    turns their output into a snapshot."""

    def __init__(self, host: Host, taken_at: float, *, runner: Runner,
                 unavailable: str | None = None, version: str | None = None,
                 errors: tuple[str, ...] = (), notes: tuple[str, ...] = (),
                 zpool: str = "", zfs: str | None = None, use_json: bool = False,
                 extra: Mapping[str, Sequence[str]] | None = None,
                 datasets: bool = False) -> None:
        self.host = host
        self.taken_at = taken_at
        self.unavailable = unavailable
        self.version = version
        self.errors = errors
        self.notes = notes
        self._runner = runner
        self._zpool, self._zfs, self._use_json = zpool, zfs, use_json
        self._extra = dict(extra or {})
        self._running: SideBySide | None = None
        if zpool and unavailable is None:
            jobs: dict[str, Sequence[str]] = {**pool_commands(zpool, use_json), **self._extra}
            if datasets and zfs is not None:
                jobs["datasets"] = dataset_command(zfs, use_json)
            self._running = SideBySide(jobs, runner)

    def finish(self) -> tuple[ZfsSnapshot, Outputs]:
        from zsn.zfs import listing
        from zsn.zfs.model import Dataset, ZfsSnapshot

        if self.unavailable is not None or self._running is None:
            return ZfsSnapshot(unavailable=self.unavailable, version=self.version,
                               errors=self.errors, taken_at=self.taken_at,
                               notes=self.notes), {}
        results = self._running.results()
        use_json, zpool, zfs = self._use_json, self._zpool, self._zfs
        if use_json and any(_json_refused(results[key]) for key in results
                            if key not in self._extra):
            use_json = False  # a userland older than the module: ask again in text
            jobs = dict(pool_commands(zpool, False))
            if "datasets" in results and zfs is not None:
                jobs["datasets"] = dataset_command(zfs, False)
            results.update(run_side_by_side(jobs, self._runner))
        extra_results = {key: results.pop(key) for key in self._extra}
        errors = list(self.errors)
        outputs: dict[str, str] = {}
        for key, result in results.items():
            if isinstance(result, CommandError):
                errors.append(str(result))
            elif not result.ok:
                reason = explain_failure(result)
                if reason == MODULE_NOT_LOADED:
                    return ZfsSnapshot(unavailable=reason, version=self.version,
                                       taken_at=self.taken_at), {}
                errors.append(reason)
            else:
                outputs[key] = result.stdout
        pools: list[Pool] = []
        found: list[Dataset] = []
        try:
            pools = _merge(outputs.get("list"), outputs.get("status"), use_json)
        except ParseError as exc:
            errors.append(f"zpool output not understood: {exc}")
        if "datasets" in outputs:
            try:
                found = (listing.parse_datasets_json(outputs["datasets"]) if use_json
                         else listing.parse_datasets_text(outputs["datasets"]))
            except ParseError as exc:
                errors.append(f"zfs list output not understood: {exc}")
        snapshot = ZfsSnapshot(pools=tuple(pools), datasets=tuple(found), version=self.version,
                               errors=tuple(dict.fromkeys(errors)), taken_at=self.taken_at,
                               notes=self.notes)
        return snapshot, extra_results


def start_reading(host: Host,
                  extra: Callable[[str], Mapping[str, Sequence[str]]] | dict[str, Any], *,
                  datasets: bool = True, runner: Runner = _run,
                  clock: Callable[[], float] = time.time) -> Reading:
    """Start `read_with`'s commands and return at once."""
    taken_at = clock()
    if not module_loaded(host):
        return Reading(host, taken_at, runner=runner, unavailable=MODULE_NOT_LOADED)
    version = kernel_version(host)
    notes = () if host.is_superuser else (NEED_ROOT,)
    zpool = find_program("zpool")
    if zpool is None:
        return Reading(host, taken_at, runner=runner, version=version, notes=notes,
                       errors=(NOT_INSTALLED.format(program="zpool"),))
    zfs = find_program("zfs")
    errors = (NOT_INSTALLED.format(program="zfs"),) if datasets and zfs is None else ()
    return Reading(host, taken_at, runner=runner, version=version, errors=errors,
                   notes=notes, zpool=zpool, zfs=zfs, use_json=has_json(version),
                   extra=extra(zpool) if callable(extra) else extra, datasets=datasets)


def crypt_devices(host: Host) -> list[str]:
    """The machine's dm-crypt devices (sysfs: a ``CRYPT-`` dm uuid), so that `dmsetup
    table` runs only where there is a cipher to read."""
    try:
        names = [entry.name for entry in files.list_files(host.path("/sys/block"), "dm-*")]
    except (OSError, ZsnError):
        return []
    found = []
    for name in names:
        try:
            uuid = files.read_text(host.path(f"/sys/block/{name}/dm/uuid"), SYSFS_CAP)
        except (OSError, ZsnError):
            continue
        if uuid.startswith("CRYPT-"):
            found.append(name)
    return found


def advisor_commands(host: Host) -> Callable[[str], dict[str, list[str]]]:
    """What the advisor runs besides zsn's reads: as root, the device-mapper tables
    (dm-crypt ciphers), only when the machine has a dm-crypt device."""

    def make(zpool: str) -> dict[str, list[str]]:
        jobs = {}
        dmsetup = find_program("dmsetup")
        if dmsetup is not None and host.is_superuser and host.is_live \
                and crypt_devices(host):
            jobs["dmsetup"] = [dmsetup, "table", "--target", "crypt"]
        return jobs

    return make


def output_of(outputs: Outputs, key: str) -> str | None:
    result = outputs.get(key)
    if isinstance(result, commands.CommandResult) and result.ok:
        return result.stdout
    return None


class Everything:
    """`read_everything`'s commands under way; `finish` waits, parses and gathers the
    advisor's facts."""

    def __init__(self, reading: Reading, now: float) -> None:
        self.reading = reading
        self.now = now

    def finish(self) -> tuple[ZfsSnapshot, Facts, Outputs]:
        from zsn.zfs.facts import gather

        snapshot, outputs = self.reading.finish()
        facts = gather(self.reading.host, snapshot.pools,
                       dmsetup_output=output_of(outputs, "dmsetup"), now=self.now)
        return snapshot, facts, outputs


def start_everything(host: Host, *, now: float, runner: Runner = _run,
                     iostat: bool = False) -> Everything:
    """Pools, datasets and the advisor's facts from one batch of commands side by side
    (`zsn --export zfs`, `zsn zfs advise`); with `iostat`, the since-import I/O too.
    Returns once the commands are started."""
    advisor = advisor_commands(host)

    def jobs(zpool: str) -> dict[str, list[str]]:
        found = advisor(zpool)
        if iostat:
            found["iostat"] = [zpool, "iostat", "-HpvlP"]
        return found

    return Everything(start_reading(host, jobs, runner=runner, clock=lambda: now), now)


def read_everything(host: Host, *, now: float, runner: Runner = _run,
                    iostat: bool = False) -> tuple[ZfsSnapshot, Facts, Outputs]:
    """`start_everything` and its `finish`."""
    return start_everything(host, now=now, runner=runner, iostat=iostat).finish()


def _merge(list_text: str | None, status_text: str | None, use_json: bool) -> list[Pool]:
    """`zpool list` rows (sizes) joined with `zpool status` pools (tree, scan) by name."""
    from zsn.zfs import listing, status
    from zsn.zfs.model import Pool

    sized = {}
    if list_text is not None:
        rows = (listing.parse_pools_json(list_text) if use_json
                else listing.parse_pools_text(list_text))
        sized = {row["name"]: row for row in rows}
    trees: dict[str, Pool] = {}
    if status_text is not None:
        parsed = status.parse_json(status_text) if use_json else status.parse_text(status_text)
        trees = {pool.name: pool for pool in parsed}
    pools = []
    for name in sorted(set(sized) | set(trees)):
        base = trees.get(name) or Pool(name=name, health=sized[name].get("health", "UNKNOWN"))
        extra = {k: v for k, v in sized.get(name, {}).items() if k not in ("name", "health")}
        pools.append(base._replace(**extra))
    return pools


class ZfsReader:
    """What the pane polls: full reads when due, the cheap kstat states in between."""

    def __init__(self, host: Host, *, full_every: float = 5.0, datasets_every: float = 30.0,
                 runner: Runner = _run, clock: Callable[[], float] = time.monotonic) -> None:
        self.host = host
        self.full_every = full_every
        self.datasets_every = datasets_every
        self._runner = runner
        self._clock = clock
        self._last: ZfsSnapshot | None = None
        self._last_full = float("-inf")
        self._last_datasets = float("-inf")
        self._states: dict[str, str] = {}
        self._lock = threading.Lock()

    def invalidate(self, datasets: bool = False) -> None:
        """Read everything again at the next `read` (after an action, on `r`)."""
        with self._lock:
            self._last_full = float("-inf")
            if datasets:
                self._last_datasets = float("-inf")

    def read(self) -> ZfsSnapshot:
        with self._lock:
            now = self._clock()
            states = kstat_states(self.host)
            last = self._last
            scanning = last is not None and any(
                p.scan is not None and p.scan.state == "scanning" for p in last.pools)
            due = (last is None or states != self._states or scanning
                   or now - self._last_full >= self.full_every)
            self._states = states
            if not due and last is not None:
                return last._replace(taken_at=time.time())
            want_datasets = now - self._last_datasets >= self.datasets_every
            snapshot = read_zfs(self.host, datasets=want_datasets, runner=self._runner)
            self._last_full = now
            if want_datasets and not snapshot.unavailable:
                self._last_datasets = now
            elif last is not None and not want_datasets:
                names = {pool.name for pool in snapshot.pools}
                snapshot = snapshot._replace(datasets=tuple(
                    d for d in last.datasets if d.pool in names))
            self._last = snapshot
            return snapshot
