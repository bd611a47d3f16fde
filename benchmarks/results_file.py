"""Where every benchmark records its figures: benchmarks/results/<name>.json.

README.md, BENCHMARKS.md and docs/ quote numbers from these files, and
tests/test_quoted_numbers.py checks every quote against them, so a benchmark that is re-run
keeps the prose sourced. Each file, and each entry of a file that keeps entries measured at
different times, carries when, at which commit, how and where it was measured;
`python -m benchmarks.refresh_quotes` then rewrites the prose from the files.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = RESULTS.parents[1]


def git(*args: str, root: Path = ROOT) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout.strip()


def commit() -> dict[str, str]:
    """HEAD's commit, and `tree` "dirty" when tracked files differ from it ("clean" otherwise):
    figures measured on uncommitted code are that code's, which no commit holds, so the stamp says
    so. The results files are the benchmarks' output, not code, so benchmarks run one after another
    do not make each other dirty. (A stamp backfilled from git log says "recorded":
    benchmarks/refresh_quotes.py.)"""
    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)benchmarks/results")
    return {"commit": git("rev-parse", "HEAD"), "tree": "dirty" if changed else "clean"}


def provenance(machine_note: str = "") -> dict[str, Any]:
    machine = f"{platform.machine()}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}"
    return {
        "measured_on": date.today().isoformat(),
        **commit(),
        "command": shlex.join(["python", *sys.argv]),
        "machine": f"{machine}; {machine_note}" if machine_note else machine,
    }


def stamped(entry: dict[str, Any]) -> dict[str, Any]:
    """`entry` with its own date and commit, for a file that keeps entries measured at different
    times (the file's own stamp names the command and machine of its latest run)."""
    return {**entry, "measured_on": date.today().isoformat(), **commit()}


def write(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n")


def record(
    name: str, result: dict[str, Any], merge: Callable[[dict, dict], None] | None = None, *, machine_note: str = ""
) -> Path:
    """Update results/<name>.json with `result` (top-level keys replaced, or `merge(data, result)`
    for a file that keeps several entries, each `stamped`) and stamp the file with
    `provenance(machine_note)` (library versions and the like that the figures depend on): the
    file's own stamp dates the figures outside any stamped entry."""
    path = RESULTS / f"{name}.json"
    data = json.loads(path.read_text()) if path.is_file() else {}
    (merge or dict.update)(data, result)
    data.update(provenance(machine_note))
    write(path, data)
    return path
