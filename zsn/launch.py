"""The ``zsn`` command (and ``python -m zsn``): the collector is paused while zsn's
modules are imported, then `zsn.cli` runs.

Start-up's imports make tens of thousands of objects that all stay (classes,
functions, compiled patterns): the cyclic collector would walk them again and again
without freeing any (~2 ms of the terminal UI's start). `zsn.cli.main` turns it back
on first thing; the terminal UI pauses it again until its first frame is drawn
(`zsn.tui.startup`).
"""

from __future__ import annotations

import gc


def main() -> int:
    gc.disable()
    from zsn.cli import main as run

    return run()
