"""The wall time of each command whose time README.md quotes, as a user runs it: `policylab ...` in a fresh
process and a fresh output folder, --runs times, in rounds (every command once per round, so a drift in the
machine's speed meets every command alike), with the load average before and after each run and the CPU time
the command used. A command that compiles numba kernels gets one untimed run first, so the times are those of
a set-up machine (`make setup` does not compile them).

Records each command's runs, median and range under `commands.NAME` of results/command_times.json, after
every run, so a run cut short keeps what it measured.

    .venv/bin/python benchmarks/bench_command_times.py [--runs 3] [--only demo,lava_leap]
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from results_file import record, stamped

ROOT = Path(__file__).resolve().parents[1]
POLICYLAB = ROOT / ".venv" / "bin" / "policylab"

# name -> the command's arguments ({out}: a fresh folder of this run's own)
COMMANDS: dict[str, list[str]] = {
    "demo": ["demo", "--out", "{out}/demo"],
    "lava_leap": ["lava-leap", "run", "--out", "{out}/lava"],
    "sweep_default": ["boundary", "sweep", "--store", "{out}/store"],
    "sweep_go1_v0": ["boundary", "sweep", "--robot", "go1", "--checkpoint", "go1_v0", "--store", "{out}/store"],
    "sweep_ant_v0": ["boundary", "sweep", "--robot", "ant", "--checkpoint", "ant_v0", "--store", "{out}/store"],
    "breakout_learn": ["breakout", "learn", "--out", "{out}/learn"],
}
COMPILES = {"demo", "lava_leap"}  # numba kernels: one untimed run first


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(name: str) -> dict:
    """One run of the command in a fresh folder under runs/ (made and removed here)."""
    (ROOT / "runs").mkdir(exist_ok=True)
    out = Path(tempfile.mkdtemp(prefix=f"bench-times-{name}-", dir=ROOT / "runs"))
    argv = [str(POLICYLAB), *(a.format(out=out) for a in COMMANDS[name])]
    try:
        load_before, cpu0, t0 = os.getloadavg()[0], children_cpu_s(), time.perf_counter()
        done = subprocess.run(argv, cwd=out, capture_output=True, text=True)
        wall, cpu = time.perf_counter() - t0, children_cpu_s() - cpu0
        if done.returncode != 0:
            raise SystemExit(f"{name}: exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
    finally:
        shutil.rmtree(out)
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 1),
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }


def summary(name: str, runs: list[dict]) -> dict:
    walls = [r["wall_s"] for r in runs]
    loads = [r["load_before"] for r in runs] + [r["load_after"] for r in runs]
    return {
        "command": shlex.join(["policylab", *(a.replace("{out}/", "") for a in COMMANDS[name])]),
        "runs": runs,
        "median_s": round(statistics.median(walls), 2),
        "min_s": min(walls),
        "max_s": max(walls),
        "load_min": min(loads),
        "load_max": max(loads),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="timed runs of each command (>= 3 for a quoted median)")
    ap.add_argument("--note", default="", help="what else ran on the machine, recorded with each command")
    ap.add_argument("--only", default=",".join(COMMANDS), help=f"comma-separated, of: {', '.join(COMMANDS)}")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n]
    unknown = sorted(set(names) - set(COMMANDS))
    if unknown:
        raise SystemExit(f"--only: unknown command(s) {', '.join(unknown)}")
    for name in names:
        if name in COMPILES:
            print(f"{name}: untimed first run", flush=True)
            run_once(name)
    runs: dict[str, list[dict]] = {n: [] for n in names}
    for k in range(args.runs):
        for name in names:
            runs[name].append(run_once(name))
            r = runs[name][-1]
            print(f"round {k}: {name} {r['wall_s']} s (load {r['load_before']} -> {r['load_after']})", flush=True)

            def merge(data: dict, result: dict, name=name) -> None:
                data["benchmark"] = __doc__.split("\n\n")[0].replace("\n", " ")
                data["script"] = "benchmarks/bench_command_times.py"
                data.setdefault("commands", {})[name] = stamped(result)

            record("command_times", {**summary(name, runs[name]), **({"note": args.note} if args.note else {})}, merge)


if __name__ == "__main__":
    main()
