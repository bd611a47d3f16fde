"""Benchmark: the shipped PPO Go1 networks (go1_v2, go1_v3) against issue 25's learning goals.

Reads each `policylab boundary learn` run folder given (its learn.json and timing.json, written by the
run itself) and the committed checkpoint it shipped, then measures in this process:

- training cost: updates, agent steps, the learner's own wall time (the sum of its timed updates, so a
  kill and resume counts only the time spent learning) and the median steps/s;
- the shipped file judged again, as every boundary command plays it (`learn.judge.nominal`: 256
  nominal worlds, friction 1.0, no push, 5 s): survival (goal >= 99%) and forward speed against the
  command (goal within 20%);
- how it follows five commands across the trainers' range (`learn.judge.tracking`; goal: at least
  three within 20%);
- that the committed file is byte-identical to the run's policy.onnx, and its sha256.

    .venv/bin/python benchmarks/bench_boundary_learn.py RUN_V2 [RUN_V3 ...]

Writes benchmarks/results/boundary_learn.json (one entry per checkpoint name).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from results_file import record, stamped

from policylab.envs.robots.robot import commanded_robot, robot
from policylab.hashing import sha256_hex
from policylab.studies.boundary.checkpoint import committed_record
from policylab.studies.boundary.constants import CHECKPOINT_DIR
from policylab.studies.boundary.learn import judge
from policylab.studies.boundary.learn.report import learner_time

SURVIVAL_GOAL, SPEED_TOLERANCE, HOURS_GOAL = 0.99, 0.2, 2.0


def measure(run: Path, name: str, worlds: int) -> dict:
    learn = json.loads((run / "learn.json").read_text())
    timing = json.loads((run / "timing.json").read_text())
    wall = learner_time(timing, learn["config"]["envs"] * learn["config"]["rollout"])["learner_wall_s"]
    shipped = CHECKPOINT_DIR / f"{name}.onnx"
    rec = committed_record(name)
    rob = commanded_robot(robot(rec["robot"]), rec["command"])
    t0 = time.perf_counter()
    nominal = judge.nominal(shipped, rob, worlds, rec["command"][0])
    return {
        "run": learn["rerun"],
        "recipe": learn["config"]["recipe"],
        "init": learn["config"]["init"],
        "updates": learn["updates"],
        "agent_steps": learn["agent_steps"],
        "episodes": learn["episodes"],
        "learner_wall_s": round(wall, 1),
        "learner_wall_h": round(wall / 3600, 3),
        "median_steps_per_s": round(learn["timing"]["median_steps_per_s"]),
        "within_2_hours": wall / 3600 <= HOURS_GOAL,
        "shipped_sha256": sha256_hex(shipped.read_bytes()),
        "shipped_equals_run": shipped.read_bytes() == (run / "policy.onnx").read_bytes(),
        "nominal": nominal,
        "nominal_judge_s": round(time.perf_counter() - t0, 1),
        "tracking": judge.tracking(shipped, robot(rec["robot"]), worlds),
        "survival_goal_met": nominal["survival"] >= SURVIVAL_GOAL,
        "speed_goal_met": bool(nominal["speed_within_20pct"]),
        "speed_error_pct": None
        if nominal["speed_mps"] is None
        else round(100 * (nominal["speed_mps"] - nominal["command_mps"]) / nominal["command_mps"], 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path, help="boundary learn run folders that shipped a checkpoint")
    ap.add_argument("--worlds", type=int, default=256)
    args = ap.parse_args()
    entries = {}
    for run in args.runs:
        name = json.loads((run / "learn.json").read_text())["shipped_as"]
        entries[name] = stamped(measure(run, name, args.worlds))
        print(name, json.dumps(entries[name], indent=1))
    record(
        "boundary_learn",
        {
            "goals": {
                "nominal_survival": SURVIVAL_GOAL,
                "speed_tolerance": SPEED_TOLERANCE,
                "training_hours": HOURS_GOAL,
            }
        },
        lambda data, result: data.update(result) or data.setdefault("networks", {}).update(entries),
    )


if __name__ == "__main__":
    main()
