"""Headless Chromium for the report tests, and a minimal PNG reader to look at its screenshots."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from collections import Counter
from html import unescape
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
MISSING_REASON = "chromium is not installed (Debian: apt-get install -y chromium)"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def chromium(url: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run Chromium once on `url` with a fresh profile; raises if it fails."""
    assert CHROMIUM is not None, MISSING_REASON
    command = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args, url]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return run


def dump_dom(url: str, profile: Path) -> str:
    return chromium(url, profile, "--dump-dom").stdout


def screenshot(url: str, profile: Path, out: Path, width: int, height: int) -> Path:
    chromium(url, profile, f"--screenshot={out}", f"--window-size={width},{height}")
    return out


def read_png_rgb(path: Path) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB bytes) for an 8-bit RGB/RGBA non-interlaced PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    position, idat = 8, b""
    width = height = channels = 0
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0, "unsupported PNG"
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        position += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up = previous[x]
            corner = previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[x] = (
                    line[x] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)
                ) & 0xFF
        previous = line
        rows.append(bytes(b for i, b in enumerate(line) if i % channels < 3))
    return width, height, rows


def colour_counts(path: Path) -> Counter[tuple[int, int, int]]:
    """How many pixels of the screenshot have each colour."""
    _, _, rows = read_png_rgb(path)
    return Counter((row[x], row[x + 1], row[x + 2]) for row in rows for x in range(0, len(row), 3))


def probe(page: Path, script: str, profile: Path, width: int, height: int = 1000) -> str:
    """Run `script` in a copy of `page` (beside it, its CSP removed so the probe may run) at a
    window of `width` px; the script leaves its answer in `document.body.dataset.probe`."""
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page.read_text())
    copy = page.with_name(f"probe-{page.name}")
    copy.write_text(html.replace("</body>", f"<script>{script}</script></body>"))
    dom = chromium(copy.as_uri(), profile, f"--window-size={width},{height}", "--dump-dom").stdout
    found = re.search(r'data-probe="([^"]*)"', dom)
    assert found is not None, "the probe script did not run"
    return unescape(found.group(1))
