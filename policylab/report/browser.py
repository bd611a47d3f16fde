"""Headless Chromium (Debian's package) to check that a report really renders.

`render_check(html)` loads the page with the flags that keep Chromium quiet on a closed network,
lets scripts run, and returns the number of images and how many loaded (the page stamps them on
<body>, see `report.html`). `screenshot(html, png)` takes a picture a person can look at.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--allow-file-access-from-files",
    "--virtual-time-budget=5000",
]


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _run(args: list[str], timeout: float = 90) -> str:
    exe = chromium_path()
    if exe is None:
        raise RuntimeError("Chromium is not installed (make setup installs Debian's chromium)")
    with tempfile.TemporaryDirectory(prefix="policylab-chromium-") as profile:
        proc = subprocess.run([exe, *_FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"chromium failed ({proc.returncode}): {proc.stderr[-500:]}")
    return proc.stdout


def render_check(html_path: str | Path) -> dict:
    """{'images': n, 'loaded': k, 'title': ..., 'text': ...} as the browser saw the page (`text`: the DOM
    without its tags, whitespace collapsed, so a test can read what the page says)."""
    dom = _run(["--dump-dom", Path(html_path).resolve().as_uri()])
    m = re.search(r'data-render-check="images=(\d+);loaded=(\d+)"', dom)
    title = re.search(r"<title>(.*?)</title>", dom, re.S)
    return {
        "images": int(m.group(1)) if m else -1,
        "loaded": int(m.group(2)) if m else -1,
        "title": title.group(1) if title else None,
        "dom_chars": len(dom),
        "text": " ".join(re.sub(r"<script.*?</script>|<style.*?</style>|<[^>]+>", " ", dom, flags=re.S).split()),
    }


def screenshot(html_path: str | Path, png_path: str | Path, size: str = "1200,2000") -> Path:
    png_path = Path(png_path).resolve()
    _run([f"--screenshot={png_path}", f"--window-size={size}", Path(html_path).resolve().as_uri()])
    return png_path
