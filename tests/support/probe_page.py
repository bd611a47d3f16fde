"""The probe's page driven from a test: the real `policylab boundary probe` command started on a free port,
and what its result panel shows after a run (tests/studies/boundary/test_probe.py, test_grid_axes.py)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from policylab.report.browser import Session
from tests.support.paths import ROOT


def start_probe(store: Path, out: Path, *options: str) -> tuple[subprocess.Popen, str]:
    """The real command (with `options`) in a session of its own (so Ctrl-C can go to its whole group); its
    address."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "policylab.cli",
            "boundary",
            "probe",
            "--store",
            str(store),
            "--out",
            str(out),
            *options,
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    line = proc.stdout.readline()
    assert line.startswith("probe: http://127.0.0.1:"), (line, proc.stderr.read() if proc.poll() is not None else "")
    return proc, line.split()[1]


def page_token(url: str) -> str:
    """The token the probe's page carries (what its script sends with every POST)."""
    with urllib.request.urlopen(url, timeout=60) as res:
        return re.search(r'<meta name="probe-token" content="([^"]+)">', res.read().decode()).group(1)


def post(url: str, body: dict, token: str) -> tuple[int, dict]:
    """POST `body` as JSON with the page's token, as the page does: the status and the answer's JSON."""
    req = urllib.request.Request(
        url, json.dumps(body).encode(), {"content-type": "application/json", "x-probe-token": token}
    )
    try:
        with urllib.request.urlopen(req, timeout=120) as res:
            return res.status, json.loads(res.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def shown_outcome(page: Session) -> dict:
    """What the result panel shows: outcome (status, t_fail), the store comparison, the key, the sha256."""
    return page.evaluate("""(() => { const o = document.getElementById('outcome').dataset;
        return {status: o.status, t_fail: JSON.parse(o.tFail), key: o.key, sha256: o.sha256,
                text: document.getElementById('outcome').innerText,
                stored: document.getElementById('stored').dataset.bitwise,
                stored_text: document.getElementById('stored').innerText}; })()""")


def run_and_wait(page: Session, click_js: str) -> dict:
    page.evaluate(
        "document.getElementById('outcome').dataset.status = ''; "
        "delete document.getElementById('clip-status').dataset.done;" + click_js
    )
    page.wait_for("document.getElementById('outcome').dataset.status", timeout=120)
    page.wait_for("document.getElementById('clip-status').dataset.done", timeout=120)
    return shown_outcome(page)


def stop_probe(proc: subprocess.Popen) -> tuple[str, str]:
    """Ctrl-C to the command's whole group, as a terminal sends it (SIGKILL if it has not ended within a
    minute); its remaining stdout and stderr."""
    os.killpg(proc.pid, signal.SIGINT)
    try:
        return proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
