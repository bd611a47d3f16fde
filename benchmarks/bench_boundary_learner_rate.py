"""Benchmark: `boundary learn`'s agent steps per CPU-second against the physics alone (issue 37's goal:
the learner at >= 0.7x the physics-only rate of the same model and control steps).

One process, side by side, alternating rounds (the machine is shared and noisy):
- the learner: a `boundary learn` learner of the given recipe and sizes runs whole PPO updates
  (rollout on its shards' threads, GAE, the update); agent steps per CPU-second of this process;
- the physics: `mujoco.rollout` replaying one of the learner's rollouts exactly: for each control step,
  every world's state before it (time, qpos, qvel, solver warm start), its own model (the episode's
  friction on the robot's friction geoms), and as open-loop controls the ctrl and the push force the
  learner applied, held for the step's physics substeps; one `rollout` call per control step on as many
  threads as the learner has shards. The replay must end each step on the learner's qpos bit for bit
  (counted, and the run stops otherwise), so both sides simulate the same physics: pushes, frictions,
  and the fresh episodes after falls included. Control steps per CPU-second.
CPU-seconds (process time) rather than wall time, so that other processes on the machine change the
figures less; the wall-clock rates are recorded too.

Before 2026-12-03 the physics side replayed the ctrl alone from the rollout's first state, on one
friction and without pushes or resets (a fallen robot went on lying on the floor); it simulated other,
cheaper physics than the learner's and gave 0.617 (rounds 0.617, 0.607, 0.694).

    .venv/bin/python benchmarks/bench_boundary_learner_rate.py [--recipe go1_v4] [--rounds 3]

Writes benchmarks/results/boundary_learner_rate.json.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from pathlib import Path

import mujoco
import numpy as np
from mujoco import rollout as mj_rollout
from results_file import record

from policylab.studies.boundary.learn import run as learn_run
from policylab.studies.boundary.requests import LearnRequest

INIT = mujoco.mjtState.mjSTATE_FULLPHYSICS
CONTROL = mujoco.mjtState.mjSTATE_CTRL | mujoco.mjtState.mjSTATE_XFRC_APPLIED


def clocks() -> tuple[float, float]:
    return time.process_time(), time.perf_counter()


def learner_round(learner, updates: int) -> dict:
    c0, w0 = clocks()
    for _ in range(updates):
        learner.update()
    c1, w1 = clocks()
    steps = updates * int(learner.cols[-1]) * learner.steps
    return {"steps": steps, "cpu_s": c1 - c0, "wall_s": w1 - w0}


class Replay:
    """One learner rollout's physics, captured at each control step of every shard (its batch's `step`
    wrapped), as `mujoco.rollout` inputs: per step, every world's initial state, warm start, model and
    controls, and the qpos the learner's step ended on."""

    def __init__(self, learner):
        w0 = learner.shards[0].worlds
        self.base, self.skip, self.nthread = w0.rob.base, w0.rob.frame_skip, len(learner.shards)
        self.geoms = w0.rob.friction_geoms
        self.steps: list[list[dict]] = [[] for _ in learner.shards]
        for k, sh in enumerate(learner.shards):
            self._wrap(sh.worlds, self.steps[k])
        learner.rollout()
        for sh in learner.shards:
            del sh.worlds.batch.step
        self.calls = [self._inputs([shard[t] for shard in self.steps]) for t in range(learner.steps)]
        self.datas = [mujoco.MjData(self.base) for _ in range(self.nthread)]

    def _wrap(self, w, out: list) -> None:
        b, step = w.batch, w.batch.step
        fields = ("time", "qpos", "qvel", "qacc_warmstart", "ctrl", "xfrc_applied")

        def captured(*args, **kwargs):
            before = {f: np.copy(b.bind(f)) for f in fields}
            result = step(*args, **kwargs)
            out.append({**before, "mu": np.copy(w.mu), "after": np.copy(b.bind("qpos"))})
            return result

        b.step = captured

    def _inputs(self, parts: list[dict]) -> dict:
        cat = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        n, d = len(cat["mu"]), mujoco.MjData(self.base)
        init = np.empty((n, mujoco.mj_stateSize(self.base, INIT)))
        for i in range(n):
            d.time, d.qpos[:], d.qvel[:] = cat["time"][i], cat["qpos"][i], cat["qvel"][i]
            mujoco.mj_getState(self.base, d, init[i], INIT)
        control = np.concatenate([cat["ctrl"], cat["xfrc_applied"].reshape(n, -1)], axis=1)
        return {
            "mu": cat["mu"],
            "init": init,
            "warm": cat["qacc_warmstart"],
            "control": np.repeat(control[:, None, :], self.skip, axis=1),
            "after": cat["after"],
        }


def physics_round(replay: Replay, repeats: int, chunk: int = 64) -> dict:
    """`mujoco.rollout` of the captured control steps, `repeats` times, `chunk` worlds per call: a world
    runs on a model of its own friction, and a copy of the Go1 model takes about 40 MB (its meshes), so
    `chunk` copies are made once and each call's frictions are written into them before it. Only the
    `rollout` calls are timed."""
    nq, n = replay.base.nq, len(replay.calls[0]["mu"])
    models = [copy.copy(replay.base) for _ in range(min(chunk, n))]
    state = np.empty((chunk, replay.skip, replay.calls[0]["init"].shape[1]))
    identical = cpu = wall = 0.0
    with mj_rollout.Rollout(nthread=replay.nthread) as r:
        for _ in range(repeats):
            for lo in range(0, n, chunk):
                rows = slice(lo, min(n, lo + chunk))
                k = rows.stop - rows.start
                for c in replay.calls:
                    for m, mu in zip(models, c["mu"][rows]):
                        m.geom_friction[replay.geoms, 0] = mu
                    c0, w0 = clocks()
                    r.rollout(
                        models[:k],
                        replay.datas,
                        c["init"][rows],
                        c["control"][rows],
                        control_spec=CONTROL,
                        initial_warmstart=c["warm"][rows],
                        state=state[:k],
                    )
                    c1, w1 = clocks()
                    cpu, wall = cpu + c1 - c0, wall + w1 - w0
                    identical += int((state[:k, -1, 1 : 1 + nq] == c["after"][rows]).all(axis=1).sum())
    steps = repeats * n * len(replay.calls)
    return {"steps": steps, "cpu_s": cpu, "wall_s": wall, "identical": int(identical)}


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
    learner = learn_run.build(learn_run.plan(req))
    for _ in range(2):  # past the first episodes' resets, as a run in progress is
        learner.update()
    replay = Replay(learner)
    rounds = []
    for k in range(args.rounds):
        lr = learner_round(learner, args.updates)
        ph = physics_round(replay, args.updates)
        if ph["identical"] != ph["steps"]:
            raise SystemExit(f"the replay left the learner's physics: {ph['steps'] - ph['identical']} steps differ")
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
            f"ratio {rounds[-1]['ratio_cpu']:.3f} per cpu-s, {rounds[-1]['ratio_wall']:.3f} wall; "
            f"replay identical on {ph['identical']:,} of {ph['steps']:,} steps",
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
            "physics_side": "mujoco.rollout replaying the learner's own control steps (state, friction, ctrl, push), "
            "bitwise checked",
            "earlier_method_median_ratio_cpu": 0.617,
        },
    )


if __name__ == "__main__":
    main()
