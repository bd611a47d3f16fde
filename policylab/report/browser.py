"""Headless Chromium (Debian's package) to check that a report really renders: `render_check`,
`screenshot`, and `Session`, which drives a live page."""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import shutil
import subprocess
import tempfile
import time
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
        proc = subprocess.run(
            [exe, *_FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=timeout
        )
    if proc.returncode != 0:
        raise RuntimeError(f"chromium failed ({proc.returncode}): {proc.stderr[-500:]}")
    return proc.stdout


def _plain(html: str) -> str:
    return " ".join(re.sub(r"<script.*?</script>|<style.*?</style>|<[^>]+>", " ", html, flags=re.S).split())


def render_check(html_path: str | Path) -> dict:
    """{'images': n, 'loaded': k, 'title': ..., 'text': ..., 'tiles': [(name, value), ...]} as the browser saw
    the page (`text`: the DOM without its tags, whitespace collapsed, so a test can read what the page says;
    `tiles`: each headline card's name and value text, so a test can find a blank one)."""
    dom = _run(["--dump-dom", Path(html_path).resolve().as_uri()])
    m = re.search(r'data-render-check="images=(\d+);loaded=(\d+)"', dom)
    title = re.search(r"<title>(.*?)</title>", dom, re.S)
    return {
        "images": int(m.group(1)) if m else -1,
        "loaded": int(m.group(2)) if m else -1,
        "title": title.group(1) if title else None,
        "dom_chars": len(dom),
        "text": _plain(dom),
        "tiles": [
            (_plain(k), _plain(v))
            for k, v in re.findall(
                r'<div class="card"><div class="k">(.*?)</div>\s*<div class="v">(.*?)</div></div>', dom, re.S
            )
        ],
    }


def screenshot(html_path: str | Path, png_path: str | Path, size: str = "1200,2000") -> Path:
    png_path = Path(png_path).resolve()
    _run([f"--screenshot={png_path}", f"--window-size={size}", Path(html_path).resolve().as_uri()])
    return png_path


class Session:
    """Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: the
    browser reads commands on its fd 3 and answers on fd 4, each message JSON ended by a NUL byte), so a
    test can load a live page, click in it and read what it shows, with no driver library and no port.

    `open(url)` loads a page; `evaluate(js)` returns a JavaScript expression's value (promises awaited);
    `wait_for(js)` polls an expression until it is truthy."""

    def __init__(self, timeout: float = 90):
        exe = chromium_path()
        if exe is None:
            raise RuntimeError("Chromium is not installed (make setup installs Debian's chromium)")
        self._profile = tempfile.TemporaryDirectory(prefix="policylab-chromium-")
        to_browser, self._out = os.pipe()
        self._in, from_browser = os.pipe()

        def wire() -> None:  # in the child, before exec: its fd 3 reads our commands, fd 4 writes answers
            # copies above 4 first, so neither end is overwritten by the other's move; then inheritable
            # copies at 3 and 4 (a pipe end that already was 3 or 4 would stay close-on-exec)
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_browser, from_browser)]
            for fd, target in zip(high, (3, 4)):
                os.dup2(fd, target, inheritable=True)

        flags = [f for f in _FLAGS if not f.startswith("--virtual-time-budget")]
        self._proc = subprocess.Popen(
            [exe, *flags, f"--user-data-dir={self._profile.name}", "--remote-debugging-pipe", "about:blank"],
            preexec_fn=wire,
            close_fds=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser)
        os.close(from_browser)
        self._timeout, self._next, self._buffer = timeout, 0, b""
        self._session: str | None = None

    def _send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._next += 1
        msg = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._out, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self._timeout
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self._next:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply.get("result", {})
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._in], [], [], left)[0]:
                raise TimeoutError(f"Chromium did not answer {method} in {self._timeout} s")
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed its pipe")
            self._buffer += chunk

    def open(self, url: str) -> None:
        target = self._send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self._send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self._send("Page.enable", session=self._session)
        self._send("Page.navigate", {"url": url}, session=self._session)

    def evaluate(self, expression: str):
        """The value of `expression` in the page (a promise is awaited); a JavaScript exception raises."""
        result = self._send(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
            session=self._session,
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails'].get('exception', {}).get('description')}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 60, every: float = 0.05):
        """Poll `expression` until it is truthy; its value. TimeoutError after `timeout` s."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = self.evaluate(expression)
            except RuntimeError:  # the page is still loading (no document yet)
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"{expression} stayed false for {timeout} s")
            time.sleep(every)

    def close(self) -> None:
        try:
            self._send("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        for fd in (self._in, self._out):
            try:
                os.close(fd)
            except OSError:
                pass
        self._profile.cleanup()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
