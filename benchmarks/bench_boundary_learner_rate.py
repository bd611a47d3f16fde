"""Benchmark: `boundary learn`'s agent steps per CPU-second against the physics alone (issue 37's goal:
the learner at >= 0.7x the physics-only rate of the same model and control steps).

One process, side by side, alternating rounds (the machine is shared and noisy):
- the learner: a `boundary learn` learner of the given recipe and sizes runs whole PPO updates
  (rollout on its shards' threads, GAE, the update); agent steps per CPU-second of this process;
- the physics: `mujoco.rollout` of the same model on the same thread count, from the learner's own
  world states at the start of a rollout, driven by the ctrl the learner's policy gave them (held for
  the control step's substeps): the same control steps of the same robots, nothing else; control
  steps per CPU-second.
CPU-seconds (process time) rather than wall time, so that other processes on the machine change the
figures less; the wall-clock rates are recorded too.

    .venv/bin/python benchmarks/bench_boundary_learner_rate.py [--recipe go1_v4] [--rounds 3]

Writes benchmarks/results/boundary_learner_rate.json.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import mujoco
import numpy as np
from mujoco import rollout as mj_rollout
from results_file import record

from policylab.studies.boundary.learn import run as learn_run
from policylab.studies.boundary.requests import LearnRequest


def clocks() -> tuple[float, float]:
    return time.process_time(), time.perf_counter()


def learner_round(learner, updates: int) -> dict:
    c0, w0 = clocks()
    for _ in range(updates):
        learner.update()
    c1, w1 = clocks()
    steps = updates * int(learner.cols[-1]) * learner.steps
    return {"steps": steps, "cpu_s": c1 - c0, "wall_s": w1 - w0}


def captured_controls(learner) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per shard: every world's full physics state at the start of one rollout and the ctrl it got at each
    control step of it (the learner plays one rollout with its step wrapped)."""
    out = []
    for sh in learner.shards:
        w = sh.worlds
        m = w.rob.base
        data = mujoco.MjData(m)
        size = mujoco.mj_stateSize(m, mujoco.mjtState.mjSTATE_FULLPHYSICS)
        state = np.empty((w.n, size))
        qpos, qvel, t = w.batch.bind("qpos"), w.batch.bind("qvel"), w.batch.bind("time")
        for i in range(w.n):
            data.qpos[:], data.qvel[:], data.time = qpos[i], qvel[i], t[i]
            mujoco.mj_getState(m, data, state[i], mujoco.mjtState.mjSTATE_FULLPHYSICS)
        ctrls = []
        step = w.step

        def wrapped(action, step=step, w=w, ctrls=ctrls):
            result = step(action)
            ctrls.append(np.copy(w.ctrl))
            return result

        w.step = wrapped
        out.append((state, ctrls))
    learner.rollout()
    for sh in learner.shards:
        del sh.worlds.step
    return [(state, np.stack(ctrls, axis=1)) for state, ctrls in out]


def physics_round(learner, captured, repeats: int) -> dict:
    """`mujoco.rollout` of the captured rollouts, one thread per shard as the learner has them."""
    m = learner.shards[0].worlds.rob.base
    skip = learner.shards[0].worlds.rob.frame_skip
    nthread = len(learner.shards)
    datas = [mujoco.MjData(m) for _ in range(nthread)]
    state = np.concatenate([s for s, _ in captured])
    control = np.repeat(np.concatenate([c for _, c in captured]), skip, axis=1)
    c0, w0 = clocks()
    with mj_rollout.Rollout(nthread=nthread) as r:
        for _ in range(repeats):
            r.rollout(m, datas, state, control)
    c1, w1 = clocks()
    steps = repeats * control.shape[0] * control.shape[1] // skip
    return {"steps": steps, "cpu_s": c1 - c0, "wall_s": w1 - w0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recipe", default="go1_v4")
    ap.add_argument("--envs", type=int, default=1024)
    ap.add_argument("--rollout", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--updates", type=int, default=3, help="learner updates per round")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    req = LearnRequest(
        out=Path("/nonexistent"),
        recipe=args.recipe,
        envs=args.envs,
        rollout=args.rollout,
        threads=args.threads,
        steps=args.envs * args.rollout * 1000,
        eval_worlds=0,
        minibatch=min(8192, args.envs * args.rollout),
    )
    learner = learn_run.build(req, learn_run.RECIPES[req.recipe])
    for _ in range(2):  # past the first episodes' resets, as a run in progress is
        learner.update()
    captured = captured_controls(learner)
    rounds = []
    for k in range(args.rounds):
        lr = learner_round(learner, args.updates)
        ph = physics_round(learner, captured, args.updates)
        rounds.append(
            {
                "learner": lr,
                "physics": ph,
                "ratio_cpu": (lr["steps"] / lr["cpu_s"]) / (ph["steps"] / ph["cpu_s"]),
                "ratio_wall": (lr["steps"] / lr["wall_s"]) / (ph["steps"] / ph["wall_s"]),
            }
        )
        print(
            f"round {k}: learner {lr['steps'] / lr['cpu_s']:,.0f} steps/cpu-s ({lr['steps'] / lr['wall_s']:,.0f}/s), "
            f"physics {ph['steps'] / ph['cpu_s']:,.0f} steps/cpu-s ({ph['steps'] / ph['wall_s']:,.0f}/s), "
            f"ratio {rounds[-1]['ratio_cpu']:.3f} per cpu-s, {rounds[-1]['ratio_wall']:.3f} wall",
            flush=True,
        )
    record(
        "boundary_learner_rate",
        {
            "config": vars(args),
            "rounds": rounds,
            "median_ratio_cpu": statistics.median(r["ratio_cpu"] for r in rounds),
            "median_ratio_wall": statistics.median(r["ratio_wall"] for r in rounds),
            "median_learner_steps_per_cpu_s": statistics.median(
                r["learner"]["steps"] / r["learner"]["cpu_s"] for r in rounds
            ),
            "median_physics_steps_per_cpu_s": statistics.median(
                r["physics"]["steps"] / r["physics"]["cpu_s"] for r in rounds
            ),
            "goal_ratio": 0.7,
        },
    )


if __name__ == "__main__":
    main()
