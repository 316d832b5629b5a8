"""Prometheus text exposition (format 0.0.4), as node_exporter's textfile collector reads it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from zsn.terminal import safe

MetricKind = Literal["gauge", "counter"]


@dataclass
class MetricFamily:
    """One metric: its name, type, help line and samples (labels, value)."""

    name: str
    kind: MetricKind
    help: str
    samples: list[tuple[Mapping[str, str], float | int]] = field(default_factory=list)

    def add(self, labels: Mapping[str, str], value: float | int) -> None:
        self.samples.append((labels, value))


def _escape_label(value: str) -> str:
    # Label values are names from outside (pools, links, SSIDs): a scrape read in a
    # terminal (curl) must not carry their controls, so they are shown as `safe` does.
    value = safe(value)
    if "\\" not in value and '"' not in value:
        return value  # nearly every value: two scans in C, no copy
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _escape_help(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float | int) -> str:
    if type(value) is int:  # the common case first (bool is an int subclass: below)
        return str(value)
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


def render(families: Iterable[MetricFamily]) -> str:
    """Each family once, with HELP and TYPE; empty families are left out.

    A labels mapping shared by several families (a peer's, in each of its metrics) is
    rendered once: the text is kept by the mapping's identity for this call (the
    mappings all live until it returns)."""
    out: list[str] = []
    rendered: dict[int, str] = {}
    for family in families:
        if not family.samples:
            continue
        name = family.name
        out.append(f"# HELP {name} {_escape_help(family.help)}")
        out.append(f"# TYPE {name} {family.kind}")
        for labels, value in family.samples:
            if labels:
                text = rendered.get(id(labels))
                if text is None:
                    text = rendered[id(labels)] = ",".join(
                        f'{k}="{_escape_label(v)}"' for k, v in labels.items())
                out.append(f"{name}{{{text}}} {_number(value)}")
            else:
                out.append(f"{name} {_number(value)}")
    return "\n".join(out) + "\n" if out else ""
