"""Benchmark: the default 6,400-rollout boundary sweep on this machine, and a plain Gymnasium loop.

Runs `policylab boundary sweep`'s engine (`sweep.run_sweep`, local executor, 2 threads) on the
default grid (20 mu x 20 push x 16 seeds, 5 s each = 3.2M physics steps) into a fresh store, then
plays a subset of the same worlds with a plain per-world Gymnasium ``Ant-v5`` ``env.step`` loop
(friction patched on the env's model, push through ``data.xfrc_applied``, one policy call per
step) in the same process, extrapolates that to 6,400 rollouts, and checks that the Gymnasium
loop reproduces the stored trajectories bitwise (so the speed-up compares equal work). Last,
the simulator alone (no store writes) on 256 of the worlds with 1 and then 2 threads.

    .venv/bin/python benchmarks/bench_boundary_sweep.py [--checkpoint ant_v0] [--baseline-worlds 48]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np

from policylab.envs import ant
from policylab.policies import ant_linear
from policylab.rollout.store import Store
from policylab.studies.boundary import sweep
from policylab.studies.boundary.world import Grid


RESULTS = Path(__file__).resolve().parent / "results" / "boundary_sweep.json"


def record(result: dict) -> None:
    """Update benchmarks/results/boundary_sweep.json: README.md, BENCHMARKS.md and docs/ quote their figures
    from it (tests/core/test_quoted_numbers.py checks every quote), so a re-run keeps them sourced."""
    data = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    data.update(result)
    data.update(measured_on=date.today().isoformat(), command=shlex.join(["python", *sys.argv]),
                machine=f"{platform.machine()}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}")
    RESULTS.write_text(json.dumps(data, indent=2) + "\n")


def gymnasium_loop(ckpt: sweep.Checkpoint, worlds, store_root: Path, keys) -> dict:
    import gymnasium

    policy = ant_linear.load(ckpt.path)
    env = gymnasium.make("Ant-v5")
    u = env.unwrapped
    torso = ant.torso_id()
    dt = ant.control_dt()
    identical = 0
    t0 = time.perf_counter()
    trajs = []
    for w in worlds:
        u.model.geom_friction[:, 0] = w.mu
        env.reset(seed=w.seed)
        qpos = [u.data.qpos.copy()]
        k0 = int(round(w.push_t0 / dt))
        force = w.push_pct / 100.0 * ant.body_weight_n()
        angle = 0.0
        for k in range(sweep.n_steps()):
            if k == k0:
                angle = float(ant.heading(u.data.qpos)) + np.deg2rad(w.push_dir)
            on = k0 <= k < k0 + sweep.push_steps()
            u.data.xfrc_applied[torso, 0] = force * np.cos(angle) if on else 0.0
            u.data.xfrc_applied[torso, 1] = force * np.sin(angle) if on else 0.0
            action = policy.act(np.concatenate([u.data.qpos[2:], u.data.qvel])[None])[0]
            env.step(action)
            qpos.append(u.data.qpos.copy())
        trajs.append(np.array(qpos))
    wall = time.perf_counter() - t0
    env.close()
    with Store(store_root) as store:
        for key, q in zip(keys, trajs):
            identical += bool(np.array_equal(store.payload(key)["qpos"], q))
    return {"worlds": len(worlds), "wall_s": wall, "identical_to_store": identical}


def engine_scaling(ckpt: sweep.Checkpoint, worlds) -> dict:
    """Physics steps/s of the simulator alone (no store) with 1 and 2 threads on the same worlds."""
    out = {}
    for nthread in (1, 2):
        t0 = time.perf_counter()
        sweep.simulate_worlds(str(ckpt.path), worlds, nthread=nthread)
        out[f"threads_{nthread}_physics_steps_per_s"] = round(
            len(worlds) * sweep.n_steps() * ant.FRAME_SKIP / (time.perf_counter() - t0))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", default="ant_v0", help="checkpoint name or .npz path")
    ap.add_argument("--baseline-worlds", type=int, default=48, help="worlds for the Gymnasium loop")
    ap.add_argument("--chunk", type=int, default=400, help="worlds per chunk")
    ap.add_argument("--store", default=None, help="store folder (default: a fresh temporary folder)")
    args = ap.parse_args()
    ckpt = sweep.resolve_checkpoint(args.checkpoint)
    grid = Grid.build()
    with tempfile.TemporaryDirectory() as tmp:
        store_root = Path(args.store) if args.store else Path(tmp) / "store"
        result = sweep.run_sweep(grid, ckpt, store_root, Path(tmp) / "out", chunk=args.chunk)
        t = result["timing"]
        planned = sweep.sweep_keys(grid, ckpt)
        picks = np.linspace(0, len(planned) - 1, args.baseline_worlds).round().astype(int)
        base = gymnasium_loop(ckpt, [planned[i][1].world for i in picks], store_root, [planned[i][0] for i in picks])
        engine = engine_scaling(ckpt, [gw.world for _, gw in planned[:: grid.n_rollouts // 256]])
    per_world = base["wall_s"] / base["worlds"]
    steps = grid.n_rollouts * sweep.n_steps() * ant.FRAME_SKIP
    report = {
        "checkpoint": ckpt.as_dict(),
        "rollouts": grid.n_rollouts,
        "physics_steps": steps,
        "sweep_wall_s": t["wall_s"],
        "sweep_physics_steps_per_s": round(steps / t["wall_s"]),
        "store_write_thread_busy_s": t["store_write_s"],
        "counts": result["counts"],
        "gymnasium_loop": {
            "worlds": base["worlds"],
            "wall_s": round(base["wall_s"], 3),
            "physics_steps_per_s": round(base["worlds"] * sweep.n_steps() * ant.FRAME_SKIP / base["wall_s"]),
            "extrapolated_6400_s": round(per_world * grid.n_rollouts, 1),
            "identical_to_store": base["identical_to_store"],
        },
        "speedup_vs_gymnasium_loop": round(per_world * grid.n_rollouts / t["wall_s"], 2),
        "engine_only_256_worlds": engine,
        "goal_s": 126,
    }
    print(json.dumps(report, indent=2))
    record(report)


if __name__ == "__main__":
    main()
