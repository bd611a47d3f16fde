"""Wall time of the whole `policylab lava-leap run` (goal: under 30 s on the 2-core dev machine).

Usage: .venv/bin/python benchmarks/bench_lava_leap.py [--repeats 5]

Measures, each in a fresh process and a fresh output folder:
- `cold`: one run with an empty numba cache (NUMBA_CACHE_DIR pointed at a new folder), i.e. the
  first run after installing;
- `warm`: `--repeats` runs with the numba cache in place (the normal case);
and, in this process, the stages of one warm run (study, charts, report). Prints one JSON object;
quote medians, since the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import record

CLI = [sys.executable, "-m", "policylab.cli", "lava-leap", "run", "--out"]


def timed_run(out: Path, env: dict | None = None) -> float:
    start = time.perf_counter()
    subprocess.run([*CLI, str(out)], check=True, capture_output=True, env=env)
    return time.perf_counter() - start


def stages(out: Path) -> dict:
    from policylab.rollout.store import Store
    from policylab.studies.lava_leap.charts import draw_all
    from policylab.studies.lava_leap.config import LavaLeapConfig
    from policylab.studies.lava_leap.experiments import run_study
    from policylab.studies.lava_leap.report import write_report

    t0 = time.perf_counter()
    with Store(out / "store") as store:  # a fresh store: every training run is simulated
        study = run_study(LavaLeapConfig(), store)
    t1 = time.perf_counter()
    draw_all(study.charts, out / "assets")
    t2 = time.perf_counter()
    write_report(out, study)
    t3 = time.perf_counter()
    return {"study_s": round(t1 - t0, 3), "charts_s": round(t2 - t1, 3), "report_s": round(t3 - t2, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5, help="warm runs to time")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-lava-") as tmp:
        root = Path(tmp)
        cold_env = dict(os.environ, NUMBA_CACHE_DIR=str(root / "numba-cache"))
        cold = timed_run(root / "cold", cold_env)
        warm = [timed_run(root / f"warm{i}") for i in range(args.repeats)]
        inproc = [stages(root / f"stages{i}") for i in range(args.repeats)]
    result = {
        "command": "policylab lava-leap run --out DIR (defaults)",
        "cold_cache_s": round(cold, 2),
        "warm_s": [round(w, 2) for w in warm],
        "warm_median_s": round(statistics.median(warm), 2),
        "stages_median_s": {k: round(statistics.median(s[k] for s in inproc), 3) for k in inproc[0]},
    }
    print(json.dumps(result, indent=2))
    record("lava_leap", {"timed_command": result.pop("command"), **result})


if __name__ == "__main__":
    main()
