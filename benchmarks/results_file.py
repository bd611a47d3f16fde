"""Where every benchmark records its figures: benchmarks/results/<name>.json.

README.md, BENCHMARKS.md and docs/ quote numbers from these files, and
tests/test_quoted_numbers.py checks every quote against them, so a benchmark that is re-run
keeps the prose sourced. Each file carries when, how and where it was measured.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import sys
from datetime import date
from pathlib import Path
from typing import Any, Callable

RESULTS = Path(__file__).resolve().parent / "results"


def provenance(machine_note: str = "") -> dict[str, str]:
    machine = f"{platform.machine()}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}"
    return {"measured_on": date.today().isoformat(), "command": shlex.join(["python", *sys.argv]),
            "machine": f"{machine}; {machine_note}" if machine_note else machine}


def record(name: str, result: dict[str, Any], merge: Callable[[dict, dict], None] | None = None, *,
           machine_note: str = "") -> Path:
    """Update results/<name>.json with `result` (top-level keys replaced, or `merge(data, result)`
    for a file that keeps several entries) and stamp it with `provenance(machine_note)` (library
    versions and the like that the figures depend on)."""
    path = RESULTS / f"{name}.json"
    data = json.loads(path.read_text()) if path.is_file() else {}
    (merge or dict.update)(data, result)
    data.update(provenance(machine_note))
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path
