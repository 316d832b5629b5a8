"""Pool and dataset names, checked the way OpenZFS checks them (zfs_namecheck.c), and
the names of the properties zsn lists.

A name is refused with the specific rule it breaks before any command sees it.
Names always start with a letter, so one can never be taken for an option.
"""

from __future__ import annotations

import re

from zsn.errors import ValidationError

VALID_CHARACTERS = "letters, digits, '_', '-', '.', ':' and space"
_VALID_RE = re.compile(r"[A-Za-z0-9_.: -]+")
_INVALID_CHARACTER_RE = re.compile(r"[^A-Za-z0-9_.: -]")
POOL_COLUMNS = ("name", "size", "allocated", "free", "fragmentation", "capacity",
                "dedupratio", "health", "ashift", "freeing", "leaked", "readonly")
"""What zsn asks `zpool list -o` for (``freeing``, ``leaked``, ``readonly``: the rest of
zfs_exporter's default pool properties)."""
DATASET_COLUMNS = ("name", "type", "used", "available", "referenced", "compressratio",
                   "recordsize", "compression", "atime", "relatime", "xattr",
                   "mountpoint", "creation", "zsn:use")
"""What zsn asks `zfs list -o` for (``zsn:use`` is zsn's user property): the pane's and
the export's columns and every property the advisor reads, in the one listing."""
MAX_NAME = 255
"""ZFS_MAX_DATASET_NAME_LEN is 256 with the terminating NUL."""
MAX_POOL_NAME = 239
"""Room is kept for ``POOL/$ORIGIN@$ORIGIN``."""
MAX_NESTING = 50
RESERVED_POOL_NAMES = ("mirror", "raidz", "draid")


def _bad_character(text: str, what: str, part: str | None = None) -> ValidationError:
    found = _INVALID_CHARACTER_RE.search(text if part is None else part)
    character = repr(found.group(0)) if found else "?"
    return ValidationError(f"{what} {text[:60]!r} has the character {character}; "
                           f"ZFS allows {VALID_CHARACTERS}")


def validate_pool_name(text: str) -> str:
    if not text:
        raise ValidationError("a pool name is needed")
    if len(text) > MAX_POOL_NAME:
        raise ValidationError(f"pool name is {len(text)} characters long; ZFS allows "
                              f"{MAX_POOL_NAME}")
    if "/" in text or "@" in text:
        raise ValidationError(f"{text[:60]!r} is not a pool name (a pool name has no '/' "
                              "or '@')")
    if not _VALID_RE.fullmatch(text):
        raise _bad_character(text, "pool name")
    if not text[0].isascii() or not text[0].isalpha():
        raise ValidationError(f"pool name {text[:60]!r} must start with a letter")
    if text in RESERVED_POOL_NAMES:
        raise ValidationError(f"{text!r} is reserved by ZFS and cannot name a pool")
    return text


def validate_dataset_name(text: str) -> str:
    """A filesystem or volume (``pool/a/b``); snapshots and bookmarks are refused."""
    if not text:
        raise ValidationError("a dataset name is needed")
    if len(text) > MAX_NAME:
        raise ValidationError(f"dataset name is {len(text)} characters long; ZFS allows "
                              f"{MAX_NAME}")
    if "@" in text or "#" in text:
        raise ValidationError(f"{text[:60]!r} is a snapshot or bookmark; name a filesystem "
                              "or volume")
    if text.startswith("/"):
        raise ValidationError(f"{text[:60]!r} is a path; a dataset is named POOL/NAME "
                              "without a leading '/'")
    if text.endswith("/"):
        raise ValidationError(f"dataset name {text[:60]!r} ends with '/'")
    components = text.split("/")
    validate_pool_name(components[0])
    if len(components) - 1 >= MAX_NESTING:
        raise ValidationError(f"dataset {text[:60]!r} is nested {len(components) - 1} deep; "
                              f"ZFS allows {MAX_NESTING - 1}")
    for component in components[1:]:
        if not component:
            raise ValidationError(f"dataset name {text[:60]!r} has an empty component ('//')")
        if component in (".", ".."):
            raise ValidationError(f"dataset name {text[:60]!r} has a '{component}' component")
        if not _VALID_RE.fullmatch(component):
            raise _bad_character(text, "dataset name", component)
    return text


def validate_snapshot_label(label: str, dataset: str = "") -> str:
    """The part after ``@``: the same characters as a dataset component, no ``/``."""
    shown = f"{dataset}@{label}" if dataset else label
    if not label:
        raise ValidationError(f"{shown[:60]!r}: the snapshot's name after '@' is empty")
    if not _VALID_RE.fullmatch(label):
        if "/" in label:
            raise ValidationError(f"snapshot name {shown[:60]!r} has a '/' after the '@'")
        raise _bad_character(shown, "snapshot name", label)
    return label


def validate_snapshot_name(text: str) -> tuple[str, str]:
    """``DATASET@NAME`` as (dataset, name), each checked the way ZFS checks it."""
    dataset, at, label = text.partition("@")
    if not at:
        raise ValidationError(f"{text[:60]!r} is not a snapshot: write DATASET@NAME, e.g. "
                              "tank/data@2026-01-31")
    if "@" in label:
        raise ValidationError(f"snapshot name {text[:60]!r} has more than one '@'")
    if len(text) > MAX_NAME:
        raise ValidationError(f"snapshot name is {len(text)} characters long; ZFS allows "
                              f"{MAX_NAME}")
    validate_dataset_name(dataset)
    validate_snapshot_label(label, dataset)
    return dataset, label
