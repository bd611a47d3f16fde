"""Kill-and-resume: a `lava-leap run` killed during training, rerun with the same command, ends with
the same bytes as an uninterrupted run (its training runs are store records; the rest is derived)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

from tests.support.lava_run_cache import CLI, cli

# A config whose training runs last long enough to be interrupted between two of them:
# 3 algorithms + 5 LR-sweep runs on one training seed, then each algorithm's chosen learning rate
# (and its default where it differs) on one validation seed, ~0.3 s each with groups of 64 over
# 2,000 updates.
ARGS = ["--seeds", "1", "--rounds", "2000", "-G", "64"]
FILES = ["results/summary.json", "results/walkthrough.json", "results/checks.json", "index.html"]


def _rows(store: Path) -> int:
    try:
        with sqlite3.connect(store / "index.sqlite", timeout=0.1) as db:
            return db.execute("SELECT COUNT(*) FROM rollouts").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_killed_run_resumes_to_identical_bytes(tmp_path):
    out = tmp_path / "resumed"
    proc = subprocess.Popen(
        [*CLI, *ARGS, "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + 240
    while _rows(out / "store") < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = _rows(out / "store")
    assert 3 <= done < 8, f"the kill should land during training ({done} of 8 training runs stored)"
    assert not (out / "results").exists()

    resumed = cli(*ARGS, "--out", out)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    fresh = cli(*ARGS, "--out", tmp_path / "fresh")
    assert fresh.returncode == 0, fresh.stderr[-2000:]
    total = _rows(tmp_path / "fresh" / "store")
    assert 8 + 3 <= total <= 8 + 6 and _rows(out / "store") == total
    for name in FILES:
        assert (out / name).read_bytes() == (tmp_path / "fresh" / name).read_bytes(), name
