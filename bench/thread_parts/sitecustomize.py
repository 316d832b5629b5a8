"""Thread CPU time per part of a zsn that a bench starts (issue 34's in-process figures).

    ZSN_PARTS=/tmp/parts.json PYTHONPATH=bench/thread_parts \
        python3 bench/over_ssh.py --seconds 30 --wireguard-only
    python3 bench/thread_parts.py /tmp/parts.json

Python loads this `sitecustomize` in every process started with it on its path; it acts
only in ``python -m zsn`` with ``ZSN_PARTS`` set. After ``ZSN_PARTS_START`` seconds (8)
it wraps each function of `PARTS` that the tree has (`time.thread_time` around the
outermost call in each thread) and times the main thread's collections, then after
``ZSN_PARTS_SECONDS`` (24) writes ms a second per part and per thread (each thread's CPU
clock) to ``ZSN_PARTS``; ``ZSN_PARTS_EXTRA`` adds parts (``module:Class.method`` or
``module:function``, comma-separated). The wrappers cost some CPU themselves: compare
trees measured alike.
"""
import os
import sys

if os.environ.get("ZSN_PARTS") and sys.orig_argv[1:3] == ["-m", "zsn"]:
    import functools
    import gc
    import importlib
    import json
    import threading
    import time

    PARTS = [
        "textual.screen:Screen._compositor_refresh",
        "zsn.tui.output:FrontCompositor.render_partial_update",
        "textual.app:App._display",
        "textual._styles_cache:StylesCache.render_line",
        "textual.strip:Strip.adjust_cell_length",
        "zsn.tui.widgets.table:LiveTable.render_line",
        "zsn.tui.panes.base:LivePane.on_read",
        "zsn.tui.panes.wireguard:WireGuardPane.show",
        "zsn.wireguard.view:PeerRows.observe",
        "zsn.wireguard.view:PeerRows.rows",
        "zsn.tui.widgets.table:LiveTable.update",
        "zsn.tui.panes.base:LivePane.poll",
        "zsn.tui.panes.wireguard:WireGuardPane.fetch",
        "zsn.wireguard.recorder:Recorder.record",
        "zsn.tui.panes.base:LivePane._read",
        "zsn.tui.panes.base:LivePane._fetch_in_thread",  # the poll's worker, before a watch
        "zsn.tui.panes.base:LivePane._deliver",
    ]
    totals = {}
    main_ident = threading.main_thread().ident

    def wrap(owner, name, label):
        original = getattr(owner, name)
        import inspect
        if inspect.iscoroutinefunction(original):
            return
        entry = totals.setdefault(label, [0.0, 0])
        local = threading.local()

        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            depth = getattr(local, "depth", 0)
            local.depth = depth + 1
            start = time.thread_time()
            try:
                return original(*args, **kwargs)
            finally:
                local.depth = depth
                if depth == 0:
                    entry[0] += time.thread_time() - start
                entry[1] += 1

        setattr(owner, name, wrapper)

    gc_state = {"start": 0.0, "total": 0.0, "count": 0}

    def on_gc(phase, info):
        if threading.get_ident() != main_ident:
            return
        if phase == "start":
            gc_state["start"] = time.thread_time()
        else:
            gc_state["total"] += time.thread_time() - gc_state["start"]
            gc_state["count"] += 1

    def thread_cpu():
        found = {}
        for thread in threading.enumerate():
            try:
                clock = time.pthread_getcpuclockid(thread.ident)
                found[thread.name] = time.clock_gettime(clock)
            except (OSError, TypeError):
                pass
        return found

    def later():
        time.sleep(float(os.environ.get("ZSN_PARTS_START", "8")))
        extra = [part for part in os.environ.get("ZSN_PARTS_EXTRA", "").split(",") if part]
        for part in PARTS + extra:
            module, qual = part.split(":")
            try:
                owner = importlib.import_module(module)
                *path, name = qual.split(".")
                for step in path:
                    owner = getattr(owner, step)
                if name in vars(owner):
                    wrap(owner, name, part)
            except Exception as exc:  # noqa
                totals[part + " (not wrapped: " + repr(exc) + ")"] = [0.0, 0]
        gc.callbacks.append(on_gc)
        before = thread_cpu()
        started = time.monotonic()
        time.sleep(float(os.environ.get("ZSN_PARTS_SECONDS", "24")))
        after = thread_cpu()
        wall = time.monotonic() - started
        result = {"wall": wall,
                  "threads": {name: (after[name] - before.get(name, 0.0)) * 1000 / wall
                              for name in after},
                  "parts": {label: [seconds * 1000 / wall, calls / wall]
                            for label, (seconds, calls) in totals.items()},
                  "gc_main": [gc_state["total"] * 1000 / wall, gc_state["count"] / wall]}
        with open(os.environ["ZSN_PARTS"], "w") as out:
            json.dump(result, out, indent=1)

    threading.Thread(target=later, daemon=True, name="zsn-bench-parts").start()
