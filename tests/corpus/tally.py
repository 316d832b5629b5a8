"""What the corpus tests found, per family: files tried, read right, misread (a reading
that differs from the real tool's, or a file not read at all: the test fails on it),
edited right, and refused (with the kind of refusal). Printed at the end of the run
(conftest.py) and written as JSON where ZSN_CORPUS_REPORT points, for the figures of
the issue."""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Outcome:
    read: bool = False
    edited: bool | None = None
    """None: no edit was tried (the file was refused, or defines nothing to edit)."""
    refused: str | None = None
    """The refusal kind, when zsn refused the file with a reason."""


@dataclass
class Tally:
    outcomes: dict[str, dict[str, Outcome]] = field(default_factory=dict)

    def record(self, family: str, name: str, outcome: Outcome) -> None:
        self.outcomes.setdefault(family, {})[name] = outcome

    def rows(self) -> list[tuple[str, int, int, int, int, int, str]]:
        found = []
        for family in sorted(self.outcomes):
            outcomes = self.outcomes[family].values()
            kinds = Counter(o.refused for o in outcomes if o.refused)
            read = sum(o.read for o in outcomes)
            found.append((family, len(outcomes), read, len(outcomes) - read,
                          sum(bool(o.edited) for o in outcomes),
                          sum(1 for o in outcomes if o.refused),
                          ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items()))))
        return found

    def lines(self) -> list[str]:
        out = [f"{'family':<12} {'tried':>5} {'read right':>10} {'misread':>7} "
               f"{'edited right':>12} {'refused':>7}  refusal kinds"]
        for family, tried, read, misread, edited, refused, kinds in self.rows():
            out.append(f"{family:<12} {tried:>5} {read:>10} {misread:>7} {edited:>12} "
                       f"{refused:>7}  {kinds}")
        return out

    def write(self) -> None:
        target = os.environ.get("ZSN_CORPUS_REPORT")
        if not target or not self.outcomes:
            return
        data = {family: {name: vars(outcome) for name, outcome in sorted(items.items())}
                for family, items in self.outcomes.items()}
        Path(target).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


TALLY = Tally()
