"""The report as a browser shows it: a headless Chromium at a given window width (no Python
dependency: the ``chromium`` binary of the system, Debian's package).

A page is shown in a frame of the width asked for, inside a wrapper page: headless Chromium keeps
its window at least 500 px wide, and a frame's width is the viewport its page lays out in (a
phone's 390 px included). :func:`inspect_pages` loads pages with a probe script (on copies, the
pages themselves are unchanged), all in one Chromium, and returns what each probe saw once its page
loaded: the page's width against the window's (horizontal overflow), every image (loaded or not,
its width as shown, its smallest text as shown), and the smallest text of the page.
:func:`screenshot` saves a part of a page at a width as PNG.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

BINARIES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
PROBE = """<script>window.addEventListener('load', function () {
  var d = document.documentElement, imgs = Array.prototype.slice.call(document.images);
  var all = Array.prototype.slice.call(document.querySelectorAll('body *'));
  var wide = all.filter(function (e) {
    var r = e.getBoundingClientRect(); return r.right > d.clientWidth + 1 && !e.closest('.scroll');
  }).map(function (e) { return e.tagName + (e.className ? '.' + e.className : ''); });
  var font = null, where = '';
  all.forEach(function (e) {
    if (e.tagName === 'SCRIPT' || e.tagName === 'STYLE' || !e.getClientRects().length) return;
    var own = Array.prototype.some.call(e.childNodes, function (c) {
      return c.nodeType === 3 && c.textContent.trim();
    });
    if (!own) return;
    var s = parseFloat(getComputedStyle(e).fontSize);
    if (font === null || s < font) { font = s; where = e.tagName + ': ' + e.textContent.trim().slice(0, 40); }
  });
  var figures = imgs.map(function (i) {
    var r = i.getBoundingClientRect(), f = parseFloat(i.getAttribute('data-font'));
    return {alt: i.alt, natural: i.naturalWidth, shown: r.width, left: r.left, right: r.right,
            font: isNaN(f) || !i.naturalWidth ? null : f * r.width / i.naturalWidth};
  });
  var seen = JSON.stringify({
    clientWidth: d.clientWidth, scrollWidth: d.scrollWidth, innerWidth: window.innerWidth,
    images: imgs.length,
    loaded: imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length,
    wide: wide.slice(0, 10), font: font, fontAt: where, figures: figures
  });
  document.title = 'PROBE' + seen + 'PROBE';
  if (window.parent !== window) { window.parent.postMessage(seen, '*'); }
});</script>"""
WRAPPER = """<!doctype html><html><head><meta charset="utf-8"><title>WAITING</title>
<style>html,body{{margin:0;background:#fff}}iframe{{border:0;display:block;float:left}}</style>
</head><body>{frames}<script>
var seen = {{}}, want = {count};
window.addEventListener('message', function (e) {{
  var k = Array.prototype.findIndex.call(document.querySelectorAll('iframe'), function (f) {{
    return f.contentWindow === e.source; }});
  seen[k] = JSON.parse(e.data);
  if (Object.keys(seen).length === want) {{ document.title = 'PROBE' + JSON.stringify(seen) + 'PROBE'; }}
}});
</script></body></html>"""


def chromium() -> str | None:
    """The path of a Chromium (or Chrome) binary, or None."""
    return next((p for p in map(shutil.which, BINARIES) if p), None)


def _binary() -> str:
    binary = chromium()
    if binary is None:
        raise FileNotFoundError(f"no Chromium here (looked for {', '.join(BINARIES)})")
    return binary


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
            "--allow-file-access-from-files",
            f"--user-data-dir={profile}",
            *args,
        ]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def _copy_pages(pages: Sequence[Path], tmp: Path, probe: bool) -> dict[Path, Path]:
    """Copies of ``pages`` in ``tmp`` (with the probe script), and links to the other pages beside
    them, so that links between the pages still resolve."""
    copies: dict[Path, Path] = {}
    for i, page in enumerate(dict.fromkeys(Path(p).resolve() for p in pages)):
        folder = tmp / f"page-{i}"
        folder.mkdir()
        text = page.read_text(encoding="utf-8")
        if probe:
            text = text.replace("</body>", PROBE + "</body>", 1)
        (folder / page.name).write_text(text, encoding="utf-8")
        for other in page.parent.glob("*.html"):
            if other.name != page.name:
                (folder / other.name).symlink_to(other.resolve())
        copies[page] = folder / page.name
    return copies


def inspect_pages(
    views: Sequence[tuple[str | os.PathLike, int]], height: int = 900, timeout: float = 60
) -> list[dict]:
    """What a window of each (page, width) in ``views`` shows of the page once loaded, all in one
    Chromium: ``clientWidth``, ``scrollWidth`` (greater: the page overflows horizontally),
    ``images`` and ``loaded`` (counts), ``wide`` (the elements reaching past the window outside a
    scrolling box), ``font`` (the smallest computed font size, px, of any text shown) and
    ``fontAt`` (where), ``figures`` (per image: ``shown`` width, ``left`` and ``right`` edges,
    ``natural`` width, and ``font``: its smallest text in px as shown, from its ``data-font``)."""
    binary = _binary()
    with tempfile.TemporaryDirectory(prefix="probunlearn-probe-") as tmp:
        copies = _copy_pages([p for p, _ in views], Path(tmp), probe=True)
        frames = "".join(
            f'<iframe src="{copies[Path(p).resolve()].as_uri()}" width="{w}" height="{height}">'
            f"</iframe>"
            for p, w in views
        )
        wrapper = Path(tmp) / "wrapper.html"
        wrapper.write_text(WRAPPER.format(frames=frames, count=len(views)), encoding="utf-8")
        total = sum(w for _, w in views) + 20
        proc = _run(
            binary,
            [f"--window-size={max(total, 500)},{height}", "--virtual-time-budget=10000",
             "--dump-dom", wrapper.as_uri()],
            timeout,
        )  # fmt: skip
    m = re.search(r"PROBE(\{.*?\})PROBE</title>", proc.stdout, re.S)
    if m is None:
        raise RuntimeError(
            f"{binary} showed no probe for {[str(p) for p, _ in views]} (exit {proc.returncode}): "
            f"{proc.stderr[-2000:]}"
        )
    seen = json.loads(html_unescape(m.group(1)))
    return [seen[str(i)] for i in range(len(views))]


def inspect(
    page: str | os.PathLike, width: int = 1280, height: int = 900, timeout: float = 60
) -> dict:
    """:func:`inspect_pages` of one page at one width."""
    return inspect_pages([(page, width)], height, timeout)[0]


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
    timeout: float = 60,
    anchor: str = "",
) -> Path:
    """Save ``height`` px of ``page`` at a ``width`` px window, from its top or from the element
    ``#anchor``, as a PNG of ``colors`` colours (small enough for the docs)."""
    binary = _binary()
    png = Path(png)
    with tempfile.TemporaryDirectory(prefix="probunlearn-shot-") as tmp:
        copy = _copy_pages([Path(page)], Path(tmp), probe=False)[Path(page).resolve()]
        src = copy.as_uri() + (f"#{anchor}" if anchor else "")
        wrapper = Path(tmp) / "wrapper.html"
        frame = f'<iframe src="{src}" width="{width}" height="{height}"></iframe>'
        wrapper.write_text(WRAPPER.format(frames=frame, count=1), encoding="utf-8")
        raw = Path(tmp) / "shot.png"
        proc = _run(
            binary,
            [f"--window-size={max(width, 500)},{height}", "--virtual-time-budget=10000",
             f"--screenshot={raw}", wrapper.as_uri()],
            timeout,
        )  # fmt: skip
        if not raw.is_file():
            raise RuntimeError(f"{binary} wrote no screenshot (exit {proc.returncode})")
        from PIL import Image

        with Image.open(raw) as im:
            shown = im.convert("RGB").crop((0, 0, width, height))
            small = shown.quantize(colors=colors, method=Image.Quantize.MEDIANCUT)
            png.parent.mkdir(parents=True, exist_ok=True)
            small.save(png, optimize=True)
    return png
