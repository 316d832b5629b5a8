"""One plan for a whole desired-state file: each section's domain plans, in section
order, each built on the files the plans before it write, made one.

A domain's plans read the machine as they always do (`zsn.system.files`, netlink, the
daemons); `Stage` keeps the texts the plans so far will write and shows them to the
next plan through `zsn.system.files.staged`, so a peer added to an interface the same
file creates is planned against that interface's new config. Nothing is written until
the one plan is applied; a refusal anywhere refuses the whole file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zsn.desired.document import declared_sections, sections
from zsn.errors import ValidationError
from zsn.plan import FileEdit, Plan, combined
from zsn.system import files
from zsn.system.host import Host


class Stage:
    """The plans made so far and the texts they leave."""

    def __init__(self) -> None:
        self.plans: list[Plan] = []
        self.texts: dict[Path, str | None] = {}

    def add(self, plan: Plan) -> None:
        self.plans.append(plan)
        for step in plan.steps:
            if isinstance(step, FileEdit):
                self.texts[step.path] = None if step.remove else step.new_text


def plan_document(host: Host, document: Any, title: str) -> Plan:
    """The one plan that makes `host` as `document` says (no steps: it is so already)."""
    stage = Stage()
    named = frozenset(name for name in declared_sections()
                      if getattr(document, name) is not None)
    with files.staged(stage.texts):
        for each in sections(named):
            section = getattr(document, each.domain.name)
            try:
                for plan in each.face.plans(host, section):
                    if plan.steps:
                        stage.add(plan)
            except ValidationError as exc:
                raise ValidationError(f"{each.domain.name}: {exc}", exc.field) from None
    return combined(title, stage.plans)
