"""report.html in a real headless browser (Debian's `chromium`): it renders, its plots are there.

Skipped only when no chromium binary is installed (the Makefile installs it: apt package
`chromium`). The browser runs in its own process group, killed in `finally` with all its
helpers, and every run has a timeout.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from harness.report import write_report

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(n)), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")


def _chromium(tmp_path: Path, *args: str, timeout: float = 90) -> str:
    cmd = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
        "--no-first-run", "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}",
        *args,
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            start_new_session=True, env={**os.environ, "HOME": str(tmp_path)})
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    assert proc.returncode == 0, f"chromium exited with {proc.returncode}"
    return out.decode("utf-8", errors="replace")


def _png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Decode an 8-bit RGB/RGBA PNG (what chromium writes): (width, height, rows)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            w, h, depth, colour = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8 and colour in (2, 6), (depth, colour)
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line[j] for k in range(0, stride, bpp) for j in range(k, k + 3)))
        prev = line
    return w, h, rows


def test_dom_has_the_plots_and_example_link_opens_its_excerpt(fixture_run, tmp_path) -> None:
    run_dir, facts = fixture_run
    report = write_report(run_dir)
    first_example = facts["lost"][0][0]
    dom = _chromium(tmp_path, "--dump-dom", f"{report.as_uri()}#op-{first_example}")
    assert dom.count("<svg") == 4
    assert dom.count('class="fault"') == 8
    assert dom.count("<circle") >= 300
    assert "leader b2 (epoch 1)" in dom
    # The inline script opened the collapsed excerpt holding the linked line, and only it.
    opened = re.findall(r'<details class="excerpt" id="excerpt-(\d+)" open', dom)
    assert len(opened) == 1 and int(opened[0]) <= first_example


def test_screenshot_is_not_blank_and_shows_the_plot_colours(fixture_run, tmp_path) -> None:
    report = write_report(fixture_run[0])
    shot = tmp_path / "report.png"
    _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1000,1500", report.as_uri())
    w, h, rows = _png_pixels(shot)
    assert (w, h) == (1000, 1500)
    pixels = [row[i:i + 3] for row in rows[::3] for i in range(0, len(row), 9)]
    non_white = sum(1 for p in pixels if min(p) < 235)
    assert non_white / len(pixels) > 0.03, "the page looks blank"

    def near(rgb: tuple[int, int, int], tol: int = 40) -> int:
        return sum(1 for p in pixels if all(abs(p[k] - rgb[k]) <= tol for k in range(3)))

    assert near((0x2A, 0x9D, 0x4B)) > 20, "no ok-green points/lines"  # latency + throughput
    assert near((0xF0, 0xA2, 0x02)) > 5, "no info-orange"
    assert near((0xE8, 0xE8, 0xE8), tol=6) > 200, "no fault shading"
