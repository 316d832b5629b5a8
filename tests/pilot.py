"""Waiting in Pilot tests: panes read in worker threads, so tests wait for what a
user would see, with a bound, instead of sleeping a fixed time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.widgets import DataTable


async def wait_until(pilot: Any, predicate: Callable[[], object], what: str = "condition",
                     seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.02)):
        if predicate():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"{what}: not reached within {seconds:g} s")


async def wait_for_rows(pilot: Any, table: str = "#wg-peers") -> None:
    """Until the table shows the first poll's rows (and the screen has settled)."""
    rows = pilot.app.query_one(table, DataTable)
    await wait_until(pilot, lambda: rows.row_count, f"rows in {table}")
    await pilot.pause()
