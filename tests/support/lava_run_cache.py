"""One full `policylab lava-leap run` per test session (per name and arguments), shared by the tests
that read its outputs."""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CLI = [sys.executable, "-m", "policylab.cli", "lava-leap", "run"]
_ROOT = Path(tempfile.mkdtemp(prefix="lava-leap-tests-"))
atexit.register(shutil.rmtree, _ROOT, True)
STDOUT: dict[str, str] = {}  # run name -> what the command printed on stdout


def cli(*args, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=timeout)


@functools.lru_cache(maxsize=None)
def full_run(name: str = "a", args: tuple[str, ...] = ()) -> Path:
    """Run the study (on its defaults, or with `args`) into a fresh folder, once per name; returns
    the folder."""
    out = _ROOT / name
    proc = cli(*args, "--out", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    STDOUT[name] = proc.stdout
    return out


def load(out: Path, name: str) -> dict:
    return json.loads((out / "results" / name).read_text())
