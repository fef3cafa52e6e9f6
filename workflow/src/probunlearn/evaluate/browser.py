"""The report as a browser shows it: a headless Chromium at a given window width (no Python
dependency: the ``chromium`` binary of the system, Debian's package).

:func:`inspect` loads a page with a probe script (on a copy, the page itself is unchanged) and
returns what the probe saw once it loaded: the page's width against the window's (horizontal
overflow) and every image, loaded or not. :func:`screenshot` saves the top of a page as PNG.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

BINARIES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
PROBE = """<script>window.addEventListener('load', function () {
  var d = document.documentElement, imgs = Array.prototype.slice.call(document.images);
  var wide = Array.prototype.slice.call(document.querySelectorAll('body *')).filter(function (e) {
    var r = e.getBoundingClientRect(); return r.right > d.clientWidth + 1 && !e.closest('.scroll');
  }).map(function (e) { return e.tagName + (e.className ? '.' + e.className : ''); });
  document.title = 'PROBE' + JSON.stringify({
    clientWidth: d.clientWidth, scrollWidth: d.scrollWidth, innerWidth: window.innerWidth,
    images: imgs.length,
    loaded: imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length,
    wide: wide.slice(0, 10)
  }) + 'PROBE';
});</script>"""


def chromium() -> str | None:
    """The path of a Chromium (or Chrome) binary, or None."""
    return next((p for p in map(shutil.which, BINARIES) if p), None)


def _run(binary: str, args: list[str], timeout: float) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="probunlearn-chromium-") as profile:
        cmd = [
            binary,
            "--headless",
            "--no-sandbox",  # as root in a container
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--no-first-run",
            f"--user-data-dir={profile}",
            *args,
        ]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def inspect(
    page: str | os.PathLike, width: int = 1280, height: int = 900, timeout: float = 30
) -> dict:
    """What a ``width`` px window shows of ``page`` once loaded: ``clientWidth``, ``scrollWidth``
    (greater: the page overflows horizontally), ``images`` and ``loaded`` (counts), ``wide`` (the
    elements reaching past the window outside a scrolling box)."""
    binary = chromium()
    if binary is None:
        raise FileNotFoundError(f"no Chromium here (looked for {', '.join(BINARIES)})")
    page = Path(page)
    with tempfile.TemporaryDirectory(prefix="probunlearn-probe-") as tmp:
        probe = Path(tmp) / page.name
        text = page.read_text(encoding="utf-8")
        probe.write_text(text.replace("</body>", PROBE + "</body>", 1), encoding="utf-8")
        for other in page.parent.glob("*.html"):  # links between the pages still resolve
            if other.name != page.name:
                (Path(tmp) / other.name).symlink_to(other.resolve())
        proc = _run(
            binary,
            [f"--window-size={width},{height}", "--virtual-time-budget=5000", "--dump-dom",
             probe.as_uri()],
            timeout,
        )  # fmt: skip
    m = re.search(r"PROBE(\{.*?\})PROBE", proc.stdout)
    if m is None:
        raise RuntimeError(
            f"{binary} showed no probe for {page} (exit {proc.returncode}): {proc.stderr[-2000:]}"
        )
    return json.loads(html_unescape(m.group(1)))


def html_unescape(text: str) -> str:
    """The probe's JSON as the dumped DOM writes it inside <title>."""
    import html

    return html.unescape(text)


def screenshot(
    page: str | os.PathLike,
    png: str | os.PathLike,
    width: int = 1280,
    height: int = 1500,
    colors: int = 64,
    timeout: float = 30,
) -> Path:
    """Save the top ``width`` x ``height`` px of ``page`` as a PNG of ``colors`` colours (small
    enough for the docs)."""
    binary = chromium()
    if binary is None:
        raise FileNotFoundError(f"no Chromium here (looked for {', '.join(BINARIES)})")
    png = Path(png)
    with tempfile.TemporaryDirectory(prefix="probunlearn-shot-") as tmp:
        raw = Path(tmp) / "shot.png"
        proc = _run(
            binary,
            [f"--window-size={width},{height}", "--virtual-time-budget=5000",
             f"--screenshot={raw}", Path(page).resolve().as_uri()],
            timeout,
        )  # fmt: skip
        if not raw.is_file():
            raise RuntimeError(f"{binary} wrote no screenshot (exit {proc.returncode})")
        from PIL import Image

        with Image.open(raw) as im:
            small = im.convert("RGB").quantize(colors=colors, method=Image.Quantize.MEDIANCUT)
            png.parent.mkdir(parents=True, exist_ok=True)
            small.save(png, optimize=True)
    return png
