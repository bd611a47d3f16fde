"""The examples under examples/ run as a user runs them (a fresh interpreter, the repository's policylab)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.paths import ROOT


def test_ppo_breakout_vector_trains_a_few_updates():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "ppo_breakout_vector.py"), "1024"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("update ")]
    assert len(lines) == 2 and all("nan" not in ln for ln in lines)
