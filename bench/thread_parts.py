"""Print what bench/thread_parts/sitecustomize.py wrote: ms of thread CPU a second per
thread and per part, and calls a second.

    python3 bench/thread_parts.py PARTS.json...
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    for path in sys.argv[1:]:
        with open(path) as found:
            parts = json.load(found)
        print(f"== {path} ({parts['wall']:.1f} s): ms of thread CPU a second, calls a second")
        for name, ms in sorted(parts["threads"].items(), key=lambda item: -item[1]):
            print(f"  thread {name:38} {ms:7.2f}")
        for name, (ms, calls) in parts["parts"].items():
            print(f"  {name:62} {ms:7.2f} {calls:7.1f}")
        print(f"  {'collections (main thread)':62} {parts['gc_main'][0]:7.2f} "
              f"{parts['gc_main'][1]:7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
