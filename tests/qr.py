"""Reading drawn QR codes back with the real zbarimg (WireGuard configs, Wi-Fi networks)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.needs import needs_tools
from zsn.qr import matrix_from_half_blocks


def decode_half_blocks(lines: list[str], tmp_path: Path, blocks_are_light: bool = False) -> str:
    """Turn half-block text back into pixels (4 per module), as a terminal shows it:
    blocks in the foreground colour, dark unless `blocks_are_light` (light text on a
    dark background), and let zbarimg read it."""
    needs_tools("zbarimg")
    zbarimg = shutil.which("zbarimg")
    assert zbarimg is not None
    rows = [[painted != blocks_are_light for painted in row]
            for row in matrix_from_half_blocks(lines)]
    scale = 4
    image = tmp_path / "qr.pbm"
    with image.open("w") as out:
        out.write(f"P1\n{len(rows[0]) * scale} {len(rows) * scale}\n")
        for row in rows:
            pixels = " ".join("1" if dark else "0" for dark in row for _ in range(scale))
            out.write((pixels + "\n") * scale)
    # QR only: with every symbology on, zbar sometimes also "finds" a short linear
    # barcode inside the modules of a random-looking code.
    result = subprocess.run([zbarimg, "--quiet", "--raw", "-Sdisable", "-Sqrcode.enable",
                             str(image)], capture_output=True, text=True, timeout=30,
                            check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout
