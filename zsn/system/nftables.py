"""The kernel's nftables through ``nft -j`` (JSON in and out, argv only, bounded).

A batch of commands is one ``nft -j -f -`` run, which nft applies as one transaction:
all of it or nothing. A table is listed with ``nft -j list table FAMILY NAME``; what
comes back is outside input, decoded here into its objects (``{"table": {...}}``,
``{"set": {...}}`` ...) with bounds on size and depth, and typed further by whoever
knows what the table should hold (`zsn.wireguard.acl`).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from typing import Any

from zsn.errors import CommandError, ParseError, ValidationError
from zsn.system import commands
from zsn.system.limits import MiB

NFT = "nft"
NFT_TIMEOUT = 15.0
MAX_LISTING = 32 * MiB
"""A table with a few hundred thousand set elements lists in about 10 MiB."""
MAX_OBJECTS = 1_000_000
OBJECT_KINDS = frozenset({"metainfo", "table", "set", "map", "element", "chain", "rule",
                          "counter", "quota", "ct helper", "limit", "ct timeout",
                          "ct expectation", "synproxy", "flowtable", "secmark"})
"""What a listing may hold (libnftables-json(5), LIST OBJECTS)."""

NftObject = tuple[str, Mapping[str, Any]]
"""One listed object: its kind (``set``) and its properties."""


def available() -> bool:
    return shutil.which(NFT) is not None


def require_nft() -> None:
    if not available():
        raise ValidationError("nft is not installed (Debian: apt install nftables)")


def run_batch(batch: Sequence[Mapping[str, Any]], timeout: float = NFT_TIMEOUT) -> None:
    """Run `batch` (``{"add": {...}}`` ... commands) as one transaction."""
    commands.run([NFT, "-j", "-f", "-"], input_text=json.dumps({"nftables": list(batch)}),
                 timeout=timeout, max_output=1 * MiB)


def list_tables(family: str) -> set[str]:
    """The names of the tables of `family` in this network namespace."""
    result = commands.run([NFT, "-j", "list", "tables", family], timeout=NFT_TIMEOUT,
                          max_output=4 * MiB)
    return {str(body.get("name")) for kind, body in decode(result.stdout, "nft list tables")
            if kind == "table"}


def list_table(family: str, name: str) -> list[NftObject] | None:
    """The objects of table `family` `name`; None when there is no such table."""
    result = commands.run([NFT, "-j", "list", "table", family, name], timeout=NFT_TIMEOUT,
                          max_output=MAX_LISTING, check=False)
    if not result.ok:
        if name not in list_tables(family):
            return None
        raise CommandError(f"nft list table {family} {name} failed: "
                           f"{result.first_error_line()}")
    return decode(result.stdout, f"nft list table {family} {name}")


def decode(text: str, source: str) -> list[NftObject]:
    """The objects of nft's JSON output: ``{"nftables": [{KIND: {...}}, ...]}``."""
    from zsn.decode import from_json

    listing = from_json(text, dict[str, list[dict[str, dict[str, Any]]]], source,
                        max_bytes=MAX_LISTING)
    if set(listing) != {"nftables"}:
        raise ParseError('not {"nftables": [...]}', None, source)
    items = listing["nftables"]
    if len(items) > MAX_OBJECTS:
        raise ParseError(f"more than {MAX_OBJECTS} objects", None, source)
    found: list[NftObject] = []
    for index, item in enumerate(items):
        if len(item) != 1:
            raise ParseError(f"object {index} is not {{KIND: {{...}}}}", None, source)
        ((kind, body),) = item.items()
        if kind not in OBJECT_KINDS:
            raise ParseError(f"object {index}: unknown kind {kind[:40]!r}", None, source)
        found.append((kind, body))
    return found
