"""Checks a netplan tree the way ``netplan generate`` does, without acting on the host.

``netplan generate --root-dir DIR`` parses DIR's YAML and writes the backends'
files under DIR, and then runs the host's ``udevadm control --reload`` and
``systemctl is-system-running``: a check of a plan would reach the running system.
This does what generate does up to that point, through libnetplan's own API
(netplan's C library, as its Python bindings call it): parse the hierarchy, import
it into a state (netplan's validation of every definition), and have the networkd
and NetworkManager writers render each definition into DIR (their own checks).
Nothing is run, nothing outside DIR is written.

It runs in a child process (``python -m zsn.links.persist.netplan_check DIR``): a
crash in the library cannot take zsn down, and `commands.run` bounds it. Exit
status 0: valid; 1: netplan refuses it (its message on stderr); 3: no libnetplan.
"""

from __future__ import annotations

import ctypes
import sys

LIBRARIES = ("libnetplan.so.1", "libnetplan.so.0.0", "libnetplan.so.0")
"""Its SONAME: netplan 1.x, 0.105-0.106 (Debian 12), older."""
EXIT_REFUSED = 1
EXIT_NO_LIBRARY = 3
_ITERATOR_BYTES = 256
"""NetplanStateIterator is two pointers' worth; room to spare."""


class Refused(Exception):
    """netplan refuses the tree; the message is netplan's."""


def _library() -> ctypes.CDLL | None:
    for name in LIBRARIES:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def _declare(lib: ctypes.CDLL) -> None:
    pointer, error = ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)
    lib.netplan_parser_new.restype = pointer
    lib.netplan_parser_new.argtypes = []
    lib.netplan_state_new.restype = pointer
    lib.netplan_state_new.argtypes = []
    lib.netplan_parser_load_yaml_hierarchy.argtypes = [pointer, ctypes.c_char_p, error]
    lib.netplan_parser_load_yaml_hierarchy.restype = ctypes.c_int
    lib.netplan_state_import_parser_results.argtypes = [pointer, pointer, error]
    lib.netplan_state_import_parser_results.restype = ctypes.c_int
    lib.netplan_error_message.argtypes = [pointer, ctypes.c_char_p, ctypes.c_size_t]
    lib.netplan_error_message.restype = ctypes.c_ssize_t
    lib.netplan_state_iterator_init.argtypes = [pointer, pointer]
    lib.netplan_state_iterator_init.restype = None
    lib.netplan_state_iterator_next.argtypes = [pointer]
    lib.netplan_state_iterator_next.restype = pointer
    for writer in ("netplan_netdef_write_networkd", "netplan_netdef_write_nm"):
        function = getattr(lib, writer, None)
        if function is not None:
            function.argtypes = [pointer, pointer, ctypes.c_char_p,
                                 ctypes.POINTER(ctypes.c_int), error]
            function.restype = ctypes.c_int


def _message(lib: ctypes.CDLL, error: ctypes.c_void_p) -> str:
    buffer = ctypes.create_string_buffer(8192)
    lib.netplan_error_message(error, buffer, len(buffer))
    return buffer.value.decode("utf-8", "replace")


def check(lib: ctypes.CDLL, root: str) -> None:
    """Raise `Refused` with netplan's message when it would not generate `root`."""
    _declare(lib)
    error = ctypes.c_void_p()
    parser = lib.netplan_parser_new()
    encoded = root.encode()
    if not lib.netplan_parser_load_yaml_hierarchy(parser, encoded, ctypes.byref(error)):
        raise Refused(_message(lib, error))
    state = lib.netplan_state_new()
    if not lib.netplan_state_import_parser_results(state, parser, ctypes.byref(error)):
        raise Refused(_message(lib, error))
    writers = [getattr(lib, name) for name in ("netplan_netdef_write_networkd",
                                               "netplan_netdef_write_nm")
               if getattr(lib, name, None) is not None]
    iterator = ctypes.create_string_buffer(_ITERATOR_BYTES)
    lib.netplan_state_iterator_init(state, iterator)
    while True:
        netdef = lib.netplan_state_iterator_next(iterator)
        if not netdef:
            return
        for writer in writers:
            written = ctypes.c_int(0)
            if not writer(state, netdef, encoded, ctypes.byref(written), ctypes.byref(error)):
                raise Refused(_message(lib, error))


def main(argv: list[str]) -> int:
    lib = _library()
    if lib is None:
        print("libnetplan is not installed", file=sys.stderr)
        return EXIT_NO_LIBRARY
    try:
        check(lib, argv[0])
    except Refused as refused:
        print(refused, file=sys.stderr)
        return EXIT_REFUSED
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
