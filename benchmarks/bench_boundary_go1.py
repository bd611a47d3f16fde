"""Benchmark: a Go1 6,400-rollout boundary sweep, beside a plain per-world MuJoCo step loop.

Runs `policylab boundary sweep`'s engine (`sweep.run_sweep`, local executor, 2 threads, chunks of 400)
with --checkpoint (default: none, i.e. the default policy on its robot; `--checkpoint go1_v0` for the
linear policy on the go1 spec, whose figures BENCHMARKS.md quotes), on the default grid
(20 mu x 20 push x 16 seeds, 5 s = 250 control steps = 1,250 physics steps each, stopping at the
fall) into a fresh store. In the same run it plays a spread subset of the same worlds in a plain
per-world loop (`envs.robots.batch.plain_loop`: one `MjData` per world, ``mj_step(nstep=5)`` per
control step, the policy on a batch of one, the same early stop), checks that each reproduces its
stored trajectory bitwise (so the two do the same work), and extrapolates its time to 6,400 worlds.

    .venv/bin/python benchmarks/bench_boundary_go1.py [--checkpoint go1_v0] [--baseline-worlds 64]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from results_file import record

from policylab.envs.robots.batch import plain_loop
from policylab.policies.files import load_policy
from policylab.rollout.store import Store
from policylab.studies.boundary import checkpoint, protocol, records, sweep
from policylab.studies.boundary.world import Grid


def plain(ckpt: checkpoint.Checkpoint, planned, store_root: Path) -> dict:
    rob = ckpt.robot
    policy = load_policy(ckpt.path, rob.obs_dim, rob.act_dim)
    n, k0, n_push = protocol.n_steps(rob), None, protocol.push_steps(rob)
    t0 = time.perf_counter()
    trajs, steps = [], 0
    for _, gw in planned:
        w = gw.world
        k0 = int(round(w.push_t0 / rob.control_dt))
        tr = plain_loop(
            rob,
            policy.act,
            w.mu,
            w.seed,
            n_steps=n,
            force_n=w.push_pct / 100.0 * rob.body_weight_n(),
            dir_deg=w.push_dir,
            push_k0=k0,
            n_push=n_push,
        )
        steps += (len(tr["time"]) - 1) * rob.frame_skip
        trajs.append(tr["qpos"])
    wall = time.perf_counter() - t0
    with Store(store_root) as store:
        identical = sum(bool(np.array_equal(store.payload(key)["qpos"], q)) for (key, _), q in zip(planned, trajs))
    return {"worlds": len(planned), "wall_s": wall, "physics_steps": steps, "identical_to_store": identical}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", default=None, help="committed checkpoint name (default: the default policy)")
    ap.add_argument("--baseline-worlds", type=int, default=64, help="worlds for the plain loop")
    ap.add_argument("--chunk", type=int, default=400)
    args = ap.parse_args()
    load = os.getloadavg()[0]
    ckpt = checkpoint.resolve_checkpoint(args.checkpoint)
    grid = Grid.build()
    with tempfile.TemporaryDirectory() as tmp:
        store_root = Path(tmp) / "store"
        result = sweep.run_sweep(grid, ckpt, store_root, Path(tmp) / "out", chunk=args.chunk)
        t = result["timing"]
        planned = records.sweep_keys(grid, ckpt)
        picks = np.linspace(0, len(planned) - 1, args.baseline_worlds).round().astype(int)
        base = plain(ckpt, [planned[i] for i in picks], store_root)
        with Store(store_root) as store:
            steps = sum((len(store.payload(k)["time"]) - 1) for k, _ in planned) * ckpt.robot.frame_skip
    per_world = base["wall_s"] / base["worlds"]
    report = {
        "benchmark": f"the Go1 6,400-rollout boundary sweep ({ckpt.robot.ref}, {ckpt.name}; 20 mu x 20 push x 16 "
        "seeds, 5 s each, records stop at the fall) into a fresh store, beside a plain per-world "
        "MuJoCo step loop on a spread subset of the same worlds",
        "script": "benchmarks/bench_boundary_go1.py",
        "robot": ckpt.robot.ref,
        "checkpoint": ckpt.as_dict(),
        "rollouts": grid.n_rollouts,
        "physics_steps_simulated": steps,
        "physics_steps_full_horizon": grid.n_rollouts * 1250,
        "sweep_wall_s": t["wall_s"],
        "sweep_physics_steps_per_s": round(steps / t["wall_s"]),
        "store_write_thread_busy_s": t["store_write_s"],
        "counts": result["counts"],
        "plain_loop": {
            "worlds": base["worlds"],
            "wall_s": round(base["wall_s"], 3),
            "physics_steps_per_s": round(base["physics_steps"] / base["wall_s"]),
            "extrapolated_6400_s": round(per_world * grid.n_rollouts, 1),
            "identical_to_store": base["identical_to_store"],
        },
        "speedup_vs_plain_loop": round(per_world * grid.n_rollouts / t["wall_s"], 2),
        "goal_s": 126,
        "load_average_before": load,
    }
    print(json.dumps(report, indent=2))
    record("boundary_sweep_go1", report)


if __name__ == "__main__":
    main()
