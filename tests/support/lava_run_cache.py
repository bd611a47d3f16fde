"""One full `policylab lava-leap run` per test session (per name and arguments), shared by the tests
that read its outputs."""

from __future__ import annotations

import atexit
import contextlib
import functools
import io
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from policylab.cli import invoke

CLI = [sys.executable, "-m", "policylab.cli", "lava-leap", "run"]  # for a test that must kill a real process
_ROOT = Path(tempfile.mkdtemp(prefix="lava-leap-tests-"))
atexit.register(shutil.rmtree, _ROOT, True)
STDOUT: dict[str, str] = {}  # run name -> what the command printed on stdout


def cli(*args) -> subprocess.CompletedProcess:
    """`policylab lava-leap run ARGS...` in this process (`policylab.cli.invoke`: the CLI's own parsing,
    exit codes and one-line errors, without a new interpreter's start-up), stdout and stderr captured."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = invoke(["lava-leap", "run", *map(str, args)])
    return subprocess.CompletedProcess(CLI[2:] + list(map(str, args)), code, out.getvalue(), err.getvalue())


@functools.cache
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
