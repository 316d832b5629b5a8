"""Lint findings, one shape for every domain: an id, a severity, what it is about, a fix.

A domain's lint module (named in its `zsn.domains.Domain`) provides:

- ``RULES: Mapping[str, str]``: every rule id it can report, with a one-line title;
- ``SUBJECT: str``: what a finding is about, the key it has in JSON (``"interface"``,
  ``"unit"``, ``"pool"`` ...);
- ``lint(host) -> list[Finding]``.

Headless ``GROUP lint [--json]`` commands print findings with `print_findings`, so
every domain's lint reads and exits alike.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from zsn.terminal import safe_lines

if TYPE_CHECKING:
    from zsn.plan import Plan

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")


@dataclass(frozen=True)
class Finding:
    """One piece of advice about a config or the host."""

    id: str
    severity: Severity
    subject: str | None
    """What the finding is about: an interface, a unit, a pool, a link."""
    message: str
    fix: str
    """One line saying how to fix it (a command, where one does it)."""
    path: str | None = None
    line: int | None = None
    """1-based line in `path`, when the finding is about one line."""
    fix_plan: Callable[[], Plan] | None = field(default=None, compare=False, repr=False)
    """Builds the plan of a safe fix; ``None`` when the fix needs a person's judgement."""
    source: str | None = None
    """Where the advice comes from (a field note, a manual page), when it is worth naming."""

    def as_dict(self, subject_key: str = "subject") -> dict[str, object]:
        data: dict[str, object] = {
            "id": self.id, "severity": self.severity, subject_key: self.subject,
            "message": self.message, "fix": self.fix, "path": self.path,
            "line": self.line, "safe_fix": self.fix_plan is not None,
        }
        if self.source is not None:
            data["source"] = self.source
        return data

    def describe(self) -> str:
        """Two lines for a terminal: what is wrong (and where), then the fix."""
        about = f" [{self.subject}]" if self.subject else ""
        where = f" ({self.path}:{self.line})" if self.path and self.line else ""
        return safe_lines((f"{self.id} {self.severity}{about}: {self.message}{where}",
                           f"      fix: {self.fix}"))


def exit_status(findings: Iterable[Finding]) -> int:
    """1 when any finding is an error, else 0: what ``GROUP lint`` exits with."""
    return 1 if any(finding.severity == "error" for finding in findings) else 0


def count_by_severity(findings: Iterable[dict[str, object]]) -> dict[Severity, int]:
    """Exported findings (dicts) counted per severity, for Prometheus gauges."""
    counts: dict[Severity, int] = dict.fromkeys(SEVERITIES, 0)
    for finding in findings:
        severity = finding.get("severity")
        for known in SEVERITIES:
            if severity == known:
                counts[known] += 1
    return counts


def print_findings(findings: list[Finding], *, as_json: bool, subject_key: str,
                   write: Callable[[str], object] = print) -> int:
    """Print findings as text or a JSON list; return the exit status."""
    if as_json:
        write(json.dumps([f.as_dict(subject_key) for f in findings], indent=2))
    elif findings:
        for finding in findings:
            write(finding.describe())
    else:
        write("no findings")
    return exit_status(findings)
