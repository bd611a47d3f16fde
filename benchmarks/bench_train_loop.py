"""Wall time of the default training loop (`make demo`'s job: `policylab breakout train` on its
defaults), in-process vs a process pool, and the demo's pick as README quotes it.

Both runs use fresh output folders and stores, in the same invocation, alternating, so the ratio
holds when the machine's speed drifts. Usage:

    .venv/bin/python benchmarks/bench_train_loop.py [--repeats 1] [--out runs/bench-train]
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

from results_file import record, stamped


def pick_summary(report: dict) -> dict:
    """The pick of make demo's job as the README quotes it (`demo_pick` in the results file;
    tests/studies/test_demo.py recomputes each field from a demo run)."""
    ev, tr, conf = report["evaluation"], report["training"], report["evaluation"]["ale_confirmation"]
    return {
        "preset": report["objective"]["preset"],
        "candidate_id": tr["selected_candidate"]["candidate_id"],
        "search_mean": ev["winners_curse"]["search_mean"],
        "search_seeds": ev["winners_curse"]["search_seeds"],
        "validation_seeds": ev["paired_delta"]["n"],
        "validation_mean": ev["new_policy"]["mean"],
        "validation_mean_ci95": ev["new_policy"]["mean_ci95"],
        "baseline_mean": ev["baseline_policy"]["mean"],
        "paired_delta": {
            k: ev["paired_delta"][k] for k in ("mean_delta", "ci95", "wins", "losses", "verdict_agreement")
        },
        "verdict": report["decision"]["verdict"],
        "ale_confirmed": conf["equal"],
        "ale_confirmation_seeds": conf["of"],
        "ale_paired_delta": {k: conf["ale"]["paired_delta"][k] for k in ("mean_delta", "ci95")},
        "ale_verdict": conf["ale"]["verdict"],
        "regret_estimate": tr["regret_estimate"]["mean_regret"],
    }


def run(out: Path, executor: str) -> float:
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "policylab.cli", "breakout", "train", "--executor", executor, "--out", str(out)]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("runs/bench-train"))
    args = ap.parse_args()
    times: dict[str, list[float]] = {"local": [], "processes": []}
    for _ in range(args.repeats):
        for executor in times:
            times[executor].append(run(args.out / executor, executor))
    # The reports name their own --out folders; every result section must be identical.
    reports = [json.loads((args.out / e / "report.json").read_text()) for e in times]
    same = all(reports[0][k] == reports[1][k] for k in ("training", "evaluation", "decision"))
    result = {
        "machine": {
            "cpus": len(__import__("os").sched_getaffinity(0)),
            "processor": platform.processor(),
            "python": platform.python_version(),
        },
        "wall_seconds": times,
        "speedup_processes_over_local": [a / b for a, b in zip(times["local"], times["processes"])],
        "results_identical": same,
    }
    print(json.dumps(result, indent=2))
    record(
        "train_loop",
        {
            **result,
            "goal_s": 120,
            "timed_command": "policylab breakout train --executor local|processes --out DIR",
            "demo_pick": stamped(pick_summary(reports[1])),
        },
    )


if __name__ == "__main__":
    main()
