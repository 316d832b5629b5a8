"""Run a program with folders of a test bind-mounted over system folders, in a
private mount namespace, so a test can run zsn without ``--root`` (live, in a lab
namespace) while its files land in a temporary folder:

    unshare --mount --propagation private python -m tests.lab.mounts \\
        SRC:/etc/wireguard SRC2:/etc/sysctl.d -- python -m zsn wg clients w0

Every mount point must exist; a bind that fails stops before the program runs.
Run it only under ``unshare --mount --propagation private`` (`private_argv`): the
binds must never reach the host.
"""

from __future__ import annotations

import os
import subprocess
import sys


def private_argv(binds: dict[str, str], argv: list[str]) -> list[str]:
    """The argv that runs `argv` with `binds` (source -> mount point) in a private
    mount namespace."""
    return ["unshare", "--mount", "--propagation", "private", sys.executable, "-m",
            "tests.lab.mounts", *(f"{source}:{target}" for source, target in binds.items()),
            "--", *argv]


def main(args: list[str]) -> None:
    split = args.index("--")
    for bind in args[:split]:
        source, _, target = bind.rpartition(":")
        subprocess.run(["mount", "--bind", source, target], check=True, timeout=10)
    program = args[split + 1:]
    os.execvp(program[0], program)


if __name__ == "__main__":
    main(sys.argv[1:])
