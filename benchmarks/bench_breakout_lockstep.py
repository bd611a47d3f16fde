"""Lockstep of ALE and the shadow simulator over full-length episodes, per preset, through the command.

For each preset (default: ale-exact, the exact model; atari-cal, the calibrated simulator; atari, its
uncalibrated start), one `policylab breakout lockstep --preset P --episodes N --out OUT/P` (default mix
of policies: v3, the training pick, random v3-family candidates, random actions; 1,800 agent steps =
7,200 frames or game over; sticky 0.25 from ALE's own stream). The presets run as concurrent processes
(one core each); the figures come from each run's lockstep.json (deterministic) and wallclock.json, and
the harness rate is frames / the command's wall seconds (wallclock.json: from the out folder's claim to
the end, both games stepped, rendered and compared, interpreter start excluded) and frames per CPU
second of its process (interpreter start included). Usage:

    nice -n 19 .venv/bin/python benchmarks/bench_breakout_lockstep.py [--out runs/bench-lockstep]
        [--preset ale-exact:200 --preset atari-cal:100 --preset atari:20]

A preset given as NAME:N plays N episodes (default --episodes). Each preset's entry in the results
file is replaced and the others kept, so presets can be measured in separate runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from results_file import record, stamped

GOAL_IDENTICAL = 0.99  # the lockstep goal: episodes identical on every frame in objects, score and lives
GOAL_SCREENS = 0.99  # and screens identical on this fraction of frames


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=200, help="episodes per preset without its own :N")
    ap.add_argument("--preset", action="append", default=None)
    ap.add_argument("--out", type=Path, default=Path("runs/bench-lockstep"))
    args = ap.parse_args()
    presets = {}
    for item in args.preset or ["ale-exact", "atari-cal", "atari"]:
        name, _, n = item.partition(":")
        presets[name] = int(n) if n else args.episodes
    args.out.mkdir(parents=True, exist_ok=True)
    procs = {}
    for preset, episodes in presets.items():
        out = (args.out / preset).resolve()
        cmd = [
            sys.executable,
            "-m",
            "policylab.cli",
            "breakout",
            "lockstep",
            "--preset",
            preset,
            "--episodes",
            str(episodes),
            "--out",
            str(out),
        ]
        log = open(args.out / f"{preset}.log", "w")
        procs[preset] = (subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), out, log)
    results = {}
    for preset, (proc, out, log) in procs.items():
        _, status, usage = os.wait4(proc.pid, 0)  # this process's own CPU time
        log.close()
        if status != 0:
            raise SystemExit(f"lockstep --preset {preset} failed; see {args.out / (preset + '.log')}")
        data = json.loads((out / "lockstep.json").read_text())
        s = data["summary"]
        wall = json.loads((out / "wallclock.json").read_text())["wall_seconds"]  # the command's own clock
        cpu = usage.ru_utime + usage.ru_stime
        results[preset] = stamped(
            {
                "command": f"policylab breakout lockstep --preset {preset} --episodes {presets[preset]} --out OUT",
                "episodes": presets[preset],
                "pick": {k: data["pick"][k] for k in ("candidate_id", "source")} if data["pick"] else None,
                "summary": s,
                "wall_seconds": round(wall, 1),
                "cpu_seconds": round(cpu, 1),
                "frames_per_second": round(s["frames"] / wall, 1),
                "frames_per_cpu_second": round(s["frames"] / cpu, 1),
                "goals_met": {
                    "identical_to_end": s["identical_to_end_fraction"] >= GOAL_IDENTICAL,
                    "screens": s["screen_identical_fraction"] >= GOAL_SCREENS,
                },
            }
        )
        print(
            f"{preset}: identical to the end {s['identical_to_end']}/{s['episodes']}, median first divergence "
            f"{s['median_first_divergence_frame']}, screens identical {s['screen_identical_fraction']:.3f}, "
            f"{results[preset]['frames_per_second']} frames/s"
        )

    def merge(data: dict, new: dict) -> None:
        kept = data.get("presets", {})
        data.update(new)
        data["presets"] = {**kept, **new["presets"]}

    record(
        "breakout_lockstep",
        {
            "benchmark": "ALE and the shadow in lockstep, frame by frame, full-length episodes per preset "
            "(policylab breakout lockstep, default policy mix and protocol)",
            "script": "benchmarks/bench_breakout_lockstep.py",
            "goals": {
                "identical_to_end_fraction": GOAL_IDENTICAL,
                "screen_identical_fraction": GOAL_SCREENS,
                "episodes": 200,
            },
            "presets": results,
        },
        merge,
        machine_note=f"presets run as {len(presets)} concurrent processes at niceness {os.nice(0)} on a machine "
        "shared with other jobs",
    )


if __name__ == "__main__":
    main()
