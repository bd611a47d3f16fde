"""Throughput of `policylab breakout eval`: the shadow simulator with every trajectory recorded in the
store, against ALE's per-core rate through the same command, in the same run.

Per round, each a fresh output folder and store, in this order:

- shadow: `eval --env shadow --policy breakout_policy_v3 --episodes 4096 --seed 100 --max-steps 1800`
  (in-process executor: the simulation, the payload encoding and the store's writer share the
  machine's cores), and the same command at `--max-steps 2`, its start-up;
- ALE: `eval --env ale` for `--ale-episodes` episodes (one emulator, so one core), and the same at
  `--max-steps 2`.

A command's rate is (agent steps recorded - the start-up's) / (wall seconds - the start-up's):
the start-up run pays interpreter and numba start, planning, writing a record per episode and the
report, so what is left is the cost of the steps themselves. The whole command's rate (steps / wall,
nothing subtracted) and CPU seconds are recorded too. Rounds alternate, so the ratio holds when
the shared machine's speed drifts; the medians are the figures to quote.

`--baseline-tree DIR` also runs the shadow command (and its start-up) from another checkout of
policylab in every round (e.g. `git archive <commit> | tar -x -C DIR`), for a before/after
measured side by side. Usage:

    .venv/bin/python benchmarks/bench_eval_throughput.py [--rounds 3] [--ale-episodes 8] [--out runs/bench-eval]
        [--baseline-tree DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

from results_file import record

GOAL = 300.0  # shadow steps/s (whole machine) over ALE steps/s per core


def command(env: str, episodes: int, max_steps: int, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "policylab.cli",
        "breakout",
        "eval",
        "--env",
        env,
        "--policy",
        "breakout_policy_v3",
        "--episodes",
        str(episodes),
        "--seed",
        "100",
        "--max-steps",
        str(max_steps),
        "--out",
        str(out),
    ]


def run(env: str, episodes: int, max_steps: int, out: Path, tree: Path | None = None) -> dict:
    """One command in a fresh folder and store (from `tree`, another checkout, if given)."""
    shutil.rmtree(out, ignore_errors=True)
    out = out.resolve()
    envvars = {**os.environ, "PYTHONPATH": str(tree)} if tree is not None else None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        command(env, episodes, max_steps, out),
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=tree,
        env=envvars,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    rows = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    with sqlite3.connect(out / "store" / "index.sqlite") as db:
        stored = db.execute("SELECT COUNT(*) FROM rollouts WHERE payload_sha256 IS NOT NULL").fetchone()[0]
    if stored < episodes:
        raise SystemExit(f"{out}: {stored} trajectories in the store, expected {episodes}")
    return {
        "wall_s": wall,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "steps": sum(r["steps"] for r in rows),
        "episodes": len(rows),
        "stored": stored,
        "store_mb": sum(p.stat().st_size for p in (out / "store").rglob("*") if p.is_file()) / 1e6,
        "report_json_kb": (out / "report.json").stat().st_size / 1e3,
        "report_html_kb": (out / "report.html").stat().st_size / 1e3,
    }


def rate(full: dict, startup: dict) -> float:
    return (full["steps"] - startup["steps"]) / max(full["wall_s"] - startup["wall_s"], 1e-9)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--episodes", type=int, default=4096)
    ap.add_argument("--max-steps", type=int, default=1800)
    ap.add_argument("--ale-episodes", type=int, default=8)
    ap.add_argument("--out", type=Path, default=Path("runs/bench-eval"))
    ap.add_argument("--baseline-tree", type=Path, help="another checkout whose shadow command runs beside")
    ap.add_argument("--no-record", action="store_true", help="print the figures, leave the results file alone")
    args = ap.parse_args()
    rounds = []
    for r in range(args.rounds):
        runs = {
            "shadow": run("shadow", args.episodes, args.max_steps, args.out / "shadow"),
            "shadow_startup": run("shadow", args.episodes, 2, args.out / "shadow-startup"),
            "ale": run("ale", args.ale_episodes, args.max_steps, args.out / "ale"),
            "ale_startup": run("ale", args.ale_episodes, 2, args.out / "ale-startup"),
        }
        if args.baseline_tree is not None:
            tree = args.baseline_tree.resolve()
            runs["baseline"] = run("shadow", args.episodes, args.max_steps, args.out / "baseline", tree)
            runs["baseline_startup"] = run("shadow", args.episodes, 2, args.out / "baseline-startup", tree)
        shadow, ale = rate(runs["shadow"], runs["shadow_startup"]), rate(runs["ale"], runs["ale_startup"])
        rounds.append(
            {
                "shadow_steps_per_s": shadow,
                "ale_steps_per_s_per_core": ale,
                "ratio": shadow / ale,
                "shadow_whole_command_steps_per_s": runs["shadow"]["steps"] / runs["shadow"]["wall_s"],
                "shadow_cpu_us_per_step": 1e6
                * (runs["shadow"]["cpu_s"] - runs["shadow_startup"]["cpu_s"])
                / (runs["shadow"]["steps"] - runs["shadow_startup"]["steps"]),
                **(
                    {
                        "baseline_steps_per_s": rate(runs["baseline"], runs["baseline_startup"]),
                        "baseline_whole_command_steps_per_s": runs["baseline"]["steps"] / runs["baseline"]["wall_s"],
                        "speedup_whole_command": runs["baseline"]["wall_s"] / runs["shadow"]["wall_s"],
                    }
                    if "baseline" in runs
                    else {}
                ),
                "load_average": os.getloadavg()[0],
                "runs": {
                    k: {f: round(v, 3) if isinstance(v, float) else v for f, v in d.items()} for k, d in runs.items()
                },
            }
        )
        print(
            f"round {r}: shadow {shadow:,.0f} steps/s, ALE {ale:,.0f} steps/s/core, ratio {shadow / ale:,.0f}x "
            f"(shadow whole command {rounds[-1]['shadow_whole_command_steps_per_s']:,.0f} steps/s; "
            f"walls {runs['shadow']['wall_s']:.1f} / {runs['shadow_startup']['wall_s']:.1f} s"
            + (
                f"; baseline walls {runs['baseline']['wall_s']:.1f} / {runs['baseline_startup']['wall_s']:.1f} s"
                if "baseline" in runs
                else ""
            )
            + ")",
            flush=True,
        )

    def median(field: str) -> float:
        return statistics.median(x[field] for x in rounds)

    numbers = {
        "shadow_steps_per_s": [round(x["shadow_steps_per_s"]) for x in rounds],
        "ale_steps_per_s_per_core": [round(x["ale_steps_per_s_per_core"], 1) for x in rounds],
        "ratio": [round(x["ratio"], 1) for x in rounds],
        "median_shadow_steps_per_s": round(median("shadow_steps_per_s")),
        "median_ale_steps_per_s_per_core": round(median("ale_steps_per_s_per_core"), 1),
        "median_ratio": round(median("ratio"), 1),
        "median_shadow_whole_command_steps_per_s": round(median("shadow_whole_command_steps_per_s")),
        "median_shadow_wall_s": round(statistics.median(x["runs"]["shadow"]["wall_s"] for x in rounds), 2),
        "median_shadow_startup_wall_s": round(
            statistics.median(x["runs"]["shadow_startup"]["wall_s"] for x in rounds), 2
        ),
        "median_shadow_cpu_us_per_step": round(median("shadow_cpu_us_per_step"), 3),
        **(
            {
                "median_baseline_steps_per_s": round(median("baseline_steps_per_s")),
                "median_baseline_whole_command_steps_per_s": round(median("baseline_whole_command_steps_per_s")),
                "median_baseline_wall_s": round(statistics.median(x["runs"]["baseline"]["wall_s"] for x in rounds), 2),
                "median_speedup_whole_command": round(median("speedup_whole_command"), 1),
                "baseline_tree": str(args.baseline_tree),
            }
            if args.baseline_tree is not None
            else {}
        ),
        "goal_ratio": GOAL,
        "goal_met": median("ratio") >= GOAL,
        "rounds": rounds,
    }
    print(
        f"median: shadow {numbers['median_shadow_steps_per_s']:,} steps/s, ALE "
        f"{numbers['median_ale_steps_per_s_per_core']:,} steps/s/core, ratio {numbers['median_ratio']:,}x "
        f"(goal {GOAL:.0f}x)"
    )
    if args.no_record:
        return
    path = record(
        "eval_throughput",
        {
            "benchmark": "policylab breakout eval: shadow agent steps/s with every trajectory in the store (whole "
            "machine, in-process executor) vs ALE agent steps/s per core through the same command, same run; "
            "each net of its start-up (the same command at --max-steps 2)",
            "script": "benchmarks/bench_eval_throughput.py",
            "commands": {
                "shadow": shlex.join(command("shadow", args.episodes, args.max_steps, Path("OUT"))[1:]),
                "ale": shlex.join(command("ale", args.ale_episodes, args.max_steps, Path("OUT"))[1:]),
                "startup": "the same commands with --max-steps 2",
            },
            "cpu": f"{cpu_model()}, {os.cpu_count()} cpus",
            "numbers": numbers,
        },
    )
    print(f"results: {path}")


if __name__ == "__main__":
    main()
