"""Theme files, and the numbers the UI prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from zsn.errors import ZsnError
from zsn.format import coarse_duration, human_bytes, human_duration, human_rate, short_key
from zsn.rates import RateTracker
from zsn.tui.themes import load_themes, theme_dirs, theme_from_toml


def test_project_themes_load_including_a_16_colour_one() -> None:
    loaded = load_themes()
    assert loaded.problems == []
    names = {theme.name for theme in loaded.themes}
    assert {"zsn-night", "zsn-16", "zsn-paper"} <= names
    sixteen = next(t for t in loaded.themes if t.name == "zsn-16")
    assert sixteen.ansi and sixteen.primary.startswith("ansi_")
    assert theme_dirs()


def test_broken_theme_files_are_reported_and_skipped(tmp_path: Path) -> None:
    (tmp_path / "good.toml").write_text('name = "ok"\nprimary = "#112233"\n')
    (tmp_path / "syntax.toml").write_text('name = "x\n')
    (tmp_path / "colour.toml").write_text('name = "bad"\nprimary = "not-a-colour"\n')
    (tmp_path / "noname.toml").write_text('primary = "#112233"\n')
    loaded = load_themes([tmp_path])
    assert [t.name for t in loaded.themes] == ["ok"]
    assert len(loaded.problems) == 3
    assert any("colour.toml" in p and "not a colour" in p for p in loaded.problems)
    assert any("noname.toml" in p and "missing 'name'" in p for p in loaded.problems)


def test_theme_requires_primary() -> None:
    with pytest.raises(ZsnError, match="primary"):
        theme_from_toml('name = "x"\n')


def test_human_numbers() -> None:
    assert human_bytes(436) == "436 B"
    assert human_bytes(1536) == "1.5 KiB"
    assert human_rate(None) == "-"
    assert human_rate(2 * 1024 * 1024) == "2.0 MiB/s"
    assert human_duration(42) == "42s"
    assert human_duration(185) == "3m 05s"
    assert human_duration(2 * 86400 + 3 * 3600) == "2d 03h"
    assert [coarse_duration(s) for s in (0, 4, 42, 59, 60, 185, 3599, 3600 + 125)] == [
        "0s", "0s", "40s", "55s", "1m", "3m", "59m", "1h 02m"]
    assert coarse_duration(2 * 86400 + 3 * 3600 + 7) == "2d 03h"
    assert short_key("8DtMxP7orKTjWmrj/T/GQHVamZNprolZYctPJWWkzEE=") == "8DtMxP7o…"


def test_rates_between_readings_and_counter_reset() -> None:
    rates = RateTracker()
    assert rates.update("p", 10.0, 1000, 0) == (None, None)
    assert rates.update("p", 12.0, 3000, 500) == (1000.0, 250.0)
    assert rates.update("p", 13.0, 10, 10) == (None, None)  # interface restarted
    rates.forget_except(set())
    assert rates.update("p", 14.0, 20, 20) == (None, None)
