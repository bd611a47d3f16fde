"""The wall time of each command whose time README.md quotes, as a user runs it: `policylab ...` in a fresh
process and a fresh output folder, --runs times, in rounds (every command once per round, so a drift in the
machine's speed meets every command alike), with the load average before and after each run and the CPU time
the command used. A command that compiles numba kernels gets one untimed run first, so the times are those of
a set-up machine (`make setup` does not compile them). A command that reads an earlier stage's folder (the
clips read a replay batch) has that folder made once, untimed (`PREPARE`), and copied into each run's folder.

Records each command's runs, median and range under `commands.NAME` of results/command_times.json, after
every run, so a run cut short keeps what it measured; the records it replaces stay under `commands.NAME.earlier`
(the last four), since this shared machine's speed moves by up to 2x from one day to another and a median is
read beside the ones before it.

    .venv/bin/python benchmarks/bench_command_times.py [--runs 3] [--only demo,lava_leap]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from results_file import RESULTS, record, stamped

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
    "breakout_learn_v5": ["breakout", "learn", "--recipe", "v5", "--out", "{out}/learn"],
    "sweep_go1_v2": ["boundary", "sweep", "--checkpoint", "go1_v2", "--store", "{out}/store"],
    "search_four_axis": [
        *("boundary", "search", "--checkpoint", "go1_v0", "--budget", "2304", "--store", "{out}/store"),
        *("--rows", "friction=0.4:1.0:4", "--rows", "payload=0,3,6", "--rows", "motor=0.8,1,1.2"),
    ],
    "clips_go1_v0": ["boundary", "clips", "--out", "{out}/ana"],
}
COMPILES = {"demo", "lava_leap"}  # numba kernels: one untimed run first
# name -> (the untimed commands that make its input in a shared folder {prep}, the folder each run copies)
PREPARE: dict[str, tuple[list[list[str]], str]] = {
    "clips_go1_v0": (
        [
            ["boundary", "sweep", "--checkpoint", "go1_v0", "--store", "{prep}/store"],
            ["boundary", "verify", "--checkpoint", "go1_v0", "--store", "{prep}/store", "--out", "{prep}/verify"],
            ["boundary", "reduce", "--checkpoint", "go1_v0", "--store", "{prep}/store", "--out", "{prep}/ana"],
            ["boundary", "select", "--out", "{prep}/ana"],
            ["boundary", "replay", "--out", "{prep}/ana"],
        ],
        "ana",
    ),
}
# name -> the JSON list (in its run's folder) that counts what it made, and the word for one of them
ITEMS = {"clips_go1_v0": ("ana/clips/clips.json", "clip")}


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def call(argv: list[str], name: str, cwd: Path) -> None:
    """`policylab ARGV` in `cwd`; a failure ends the benchmark with its last line."""
    done = subprocess.run([str(POLICYLAB), *argv], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{name}: exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")


def prepare(name: str, prep: Path) -> None:
    """Make the input of a command that reads an earlier stage's folder, once, untimed."""
    for argv in PREPARE[name][0]:
        print(f"{name}: untimed {' '.join(argv[:2])}", flush=True)
        call([a.format(prep=prep) for a in argv], name, prep)


def run_once(name: str, prep: Path | None = None) -> dict:
    """One run of the command in a fresh folder under runs/ (made and removed here); `prep`: the folder
    `prepare` made, whose input folder is copied in first."""
    (ROOT / "runs").mkdir(exist_ok=True)
    out = Path(tempfile.mkdtemp(prefix=f"bench-times-{name}-", dir=ROOT / "runs"))
    argv = [a.format(out=out) for a in COMMANDS[name]]
    if name in PREPARE:
        shutil.copytree(prep / PREPARE[name][1], out / PREPARE[name][1])
    try:
        load_before, cpu0, t0 = os.getloadavg()[0], children_cpu_s(), time.perf_counter()
        call(argv, name, out)
        wall, cpu = time.perf_counter() - t0, children_cpu_s() - cpu0
        made = {}
        if name in ITEMS:
            path, word = ITEMS[name]
            n = len(json.loads((out / path).read_text()))
            made = {f"{word}s": n, f"s_per_{word}": round(wall / n, 3)}
    finally:
        shutil.rmtree(out)
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 1),
        **made,
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }


def summary(name: str, runs: list[dict]) -> dict:
    walls = [r["wall_s"] for r in runs]
    loads = [r["load_before"] for r in runs] + [r["load_after"] for r in runs]
    per_item = {}
    if name in ITEMS:
        key = f"s_per_{ITEMS[name][1]}"
        each = [r[key] for r in runs]
        per_item = {
            f"median_{key}": round(statistics.median(each), 3),
            f"min_{key}": min(each),
            f"max_{key}": max(each),
        }
    prepared = (
        {
            "prepared_by": [
                shlex.join(["policylab", *(a.replace("{prep}/", "") for a in argv)]) for argv in PREPARE[name][0]
            ]
        }
        if name in PREPARE
        else {}
    )
    return {
        "command": shlex.join(["policylab", *(a.replace("{out}/", "") for a in COMMANDS[name])]),
        **prepared,
        "runs": runs,
        "median_s": round(statistics.median(walls), 2),
        "min_s": min(walls),
        "max_s": max(walls),
        **per_item,
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
    (ROOT / "runs").mkdir(exist_ok=True)
    preps = {
        n: Path(tempfile.mkdtemp(prefix=f"bench-times-prep-{n}-", dir=ROOT / "runs")) for n in names if n in PREPARE
    }
    try:
        measure(names, args, preps)
    finally:
        for prep in preps.values():
            shutil.rmtree(prep)


def earlier_records(name: str, keep: int = 4) -> list[dict]:
    """The records of `name` this run will replace: the one in results/command_times.json (without its own
    `earlier`) after those it kept, the last `keep`."""
    path = RESULTS / "command_times.json"
    entry = json.loads(path.read_text()).get("commands", {}).get(name) if path.is_file() else None
    if entry is None:
        return []
    before = entry.get("earlier", [])
    return [*before, {k: v for k, v in entry.items() if k != "earlier"}][-keep:]


def measure(names: list[str], args, preps: dict[str, Path]) -> None:
    for name in names:
        if name in PREPARE:
            prepare(name, preps[name])
        if name in COMPILES:
            print(f"{name}: untimed first run", flush=True)
            run_once(name)
    runs: dict[str, list[dict]] = {n: [] for n in names}
    earlier = {n: earlier_records(n) for n in names}
    for k in range(args.runs):
        for name in names:
            runs[name].append(run_once(name, preps.get(name)))
            r = runs[name][-1]
            print(f"round {k}: {name} {r['wall_s']} s (load {r['load_before']} -> {r['load_after']})", flush=True)

            def merge(data: dict, result: dict, name=name) -> None:
                data["benchmark"] = __doc__.split("\n\n")[0].replace("\n", " ")
                data["script"] = "benchmarks/bench_command_times.py"
                data.setdefault("commands", {})[name] = {**stamped(result), "earlier": earlier[name]}

            record("command_times", {**summary(name, runs[name]), **({"note": args.note} if args.note else {})}, merge)


if __name__ == "__main__":
    main()
