"""zsn as `python -m zsn` runs it, with one thing added for bench/zfs_smart_idle.py: the
native id of the thread that reads the disks (the disk watch's) is written to the file
named by ZSN_BENCH_DISK_THREAD, so the bench can read that thread's own CPU time
(/proc/PID/task/TID/schedstat) over its idle window. Nothing else changes."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from zsn.zfs import diskwatch

_read = diskwatch.DiskReader.read
_named = threading.Event()


def _read_and_name(self: diskwatch.DiskReader, *args: object, **kwargs: object) -> object:
    if not _named.is_set() and threading.current_thread() is not threading.main_thread():
        _named.set()
        Path(os.environ["ZSN_BENCH_DISK_THREAD"]).write_text(str(threading.get_native_id()))
    return _read(self, *args, **kwargs)  # type: ignore[arg-type]


diskwatch.DiskReader.read = _read_and_name  # type: ignore[assignment,method-assign]

if __name__ == "__main__":
    from zsn.cli import main

    sys.exit(main())
