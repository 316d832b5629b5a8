"""Theme files (TOML) turned into Textual themes at start-up.

Themes come from the project's `themes/` folder (installed as `zsn/_themes`) and
from ``$XDG_CONFIG_HOME/zsn/themes``. A file that cannot be read or names a
colour Textual cannot parse is reported and skipped, never fatal.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NamedTuple

from textual.color import Color, ColorParseError
from textual.theme import Theme

import zsn
from zsn import decode
from zsn.errors import ParseError, ZsnError

_COLOUR_KEYS = (
    "primary", "secondary", "warning", "error", "success", "accent",
    "foreground", "background", "surface", "panel", "boost",
)
MAX_THEME_BYTES = 64 << 10
FALLBACK_THEME = "zsn-night"
BUILTIN_FALLBACK = "textual-dark"


class LoadedThemes(NamedTuple):
    themes: list[Theme]
    problems: list[str]


def theme_dirs() -> list[Path]:
    package = Path(zsn.__file__).resolve().parent
    config_home = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    candidates = [package.parent / "themes", package / "_themes", config_home / "zsn" / "themes"]
    return [path for path in candidates if path.is_dir()]


def _colour(value: object, key: str, source: str) -> str:
    if not isinstance(value, str):
        raise ParseError(f"{key} must be a colour string", None, source)
    if not value.startswith("ansi_"):
        try:
            Color.parse(value)
        except ColorParseError:
            raise ParseError(f"{key}: {value!r} is not a colour", None, source) from None
    return value


def theme_from_toml(text: str, source: str = "theme") -> Theme:
    data = decode.from_toml(text, dict[str, Any], source, max_bytes=MAX_THEME_BYTES)
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ParseError("missing 'name'", None, source)
    if "primary" not in data:
        raise ParseError("missing 'primary' colour", None, source)
    colours = {key: _colour(data[key], key, source) for key in _COLOUR_KEYS if key in data}
    variables = data.get("variables", {})
    if not isinstance(variables, dict) or not all(
        isinstance(v, str) for v in variables.values()
    ):
        raise ParseError("[variables] must map names to strings", None, source)
    theme = Theme(
        name=name.strip(),
        primary=colours.pop("primary"),
        dark=bool(data.get("dark", True)),
        ansi=bool(data.get("ansi", False)),
        variables={str(k): str(v) for k, v in variables.items()},
    )
    for key, value in colours.items():
        setattr(theme, key, value)
    return theme


def load_themes(directories: list[Path] | None = None) -> LoadedThemes:
    loaded = LoadedThemes([], [])
    for directory in theme_dirs() if directories is None else directories:
        for path in sorted(directory.glob("*.toml")):
            try:
                loaded.themes.append(theme_from_toml(path.read_text(encoding="utf-8"),
                                                     f"theme file {path.name}"))
            except (OSError, UnicodeDecodeError) as exc:
                loaded.problems.append(f"theme file {path.name}: {exc}")
            except ZsnError as exc:
                loaded.problems.append(str(exc))
    return loaded
