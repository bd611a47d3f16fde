"""Benchmark: the default 6,400-rollout boundary sweep through the CLI, beside MuJoCo's own batched rollout.

In one run, alternating (sweep, reference, reference, sweep, ...) so that drift in the machine's load
falls on both sides:

- **sweep**: ``python -m policylab.cli boundary sweep --checkpoint CKPT --store FRESH --out OUT`` on the
  default grid (20 mu x 20 push x 16 seeds, 5 s each), local executor, 2 threads, every rollout written
  to a fresh store. The checkpoint plays on its own robot at its own command (a committed record names
  them: ``go1_v2`` runs on ``go1_imu``). Timed as the whole process (interpreter start, planning,
  simulation, store writes, summary).
- **reference**: ``mujoco.rollout.rollout`` on 2 threads (two `MjData`, persistent pool) over the same
  6,400 worlds for the same physics steps each: each world's own model (the robot's model and options,
  its friction), its initial state and solver warm start exactly as the sweep starts it, and as
  open-loop controls the ctrl and push the sweep recorded (ctrl and ``xfrc_applied`` on the robot's push
  body, held for each control step's ``frame_skip`` physics steps), for as many control steps as the
  sweep stepped that world (the Ant's worlds all run 5 s; a Go1 world stops at its fall, so a robust
  policy's sweep simulates more steps than a weak one's). Worlds of one length go together, in chunks
  of the sweep's chunk size, one world per pool task (``chunk_size=1``, so no call ends with one thread
  idle behind a long task). Only the `rollout` calls are timed; building the inputs from the store is
  not. The reference reproduces every stored qpos trajectory bitwise (counted), so both sides do the
  same physics; ``physics_steps`` is that count (``physics_steps_full_horizon`` the grid's 5 s each).

The ratio is median sweep wall / median reference wall (the issue's goal: within 1.15x); each round's
own ratio (its sweep and reference ran back to back) and the CPU seconds of both are recorded too,
since the machine is shared; the original study's 126 s on an A100 stands beside the absolute time.
For the Ant, the same process plays 48 of the worlds with a plain per-world Gymnasium ``Ant-v5``
``env.step`` loop (friction patched on the env's model, push through ``data.xfrc_applied``, one
policy call per step), extrapolates that to 6,400 rollouts and checks that it reproduces the stored
trajectories bitwise (no other robot has such an env). Last, the simulator alone (no store writes) on
256 of the worlds with 1 and then 2 threads.

Results: benchmarks/results/boundary_sweep.json for ant_v0, boundary_sweep_<checkpoint>.json for any
other checkpoint (--n-mu/--n-push shrink the grid for a trial run; name a scratch --results then).

    .venv/bin/python benchmarks/bench_boundary_sweep.py [--checkpoint ant_v0] [--rounds 2] [--wait-idle 240]
    .venv/bin/python benchmarks/bench_boundary_sweep.py --checkpoint go1_v2    # -> boundary_sweep_go1_v2.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import mujoco
import numpy as np
from mujoco import rollout as mj_rollout
from results_file import record

from policylab import portable_math
from policylab.envs.robots.robot import robot
from policylab.policies import linear
from policylab.rollout.store import Store
from policylab.studies.boundary import checkpoint, protocol, records, simulation
from policylab.studies.boundary.verify import ANT_V5_ENV
from policylab.studies.boundary.world import Grid

ANT = robot("ant")

ROOT = Path(__file__).resolve().parents[1]
GOAL_RATIO = 1.15
ORIGINAL_A100_S = 126  # the original study's default sweep on one A100
QUIET_CORES = 0.1  # other processes' average cores below which a run counts as quiet
REFERENCE_CONTROLS = (
    "the sweep's recorded ctrl and push, open loop: ctrl ({nu}) and xfrc_applied ({body} x, y "
    "force) held for each control step's {skip} physics steps"
)


def machine_busy_s() -> float:
    """CPU seconds all processes on this machine have used since boot (/proc/stat; 0 where there is none)."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return 0.0
    user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def wait_idle(max_s: float, window_s: float = 3.0, busy_cores: float = 0.2) -> float:
    """Wait (at most `max_s`) until the other processes use under `busy_cores` cores over `window_s`; the
    seconds waited. The machine is shared, so each timed run starts when it is quiet, if it gets quiet."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < max_s:
        b0 = machine_busy_s()
        time.sleep(window_s)
        if machine_busy_s() - b0 < busy_cores * window_s:
            break
    return time.perf_counter() - t0


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cli_sweep(ckpt: str, store: Path, out: Path, chunk: int, pythonpath: str | None = None, grid=()) -> dict:
    """One `policylab boundary sweep` process on the default grid (`grid`: the options of a smaller one) into
    `store`; its wall and CPU seconds.

    `pythonpath` runs another source tree of policylab with the same interpreter (for before/after runs)."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    cmd = [
        sys.executable,
        "-m",
        "policylab.cli",
        "boundary",
        "sweep",
        "--checkpoint",
        ckpt,
        "--store",
        str(store),
        "--out",
        str(out),
        "--chunk",
        str(chunk),
        *map(str, grid),
    ]
    load = os.getloadavg()[0]
    busy0, c0, t0 = machine_busy_s(), _children_cpu(), time.perf_counter()
    subprocess.run(
        cmd, check=True, env=env, cwd=pythonpath or ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
    others = machine_busy_s() - busy0 - cpu
    timing = json.loads((out / "timing.json").read_text())
    summary = json.loads((out / "sweep.json").read_text())
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "others_cpu_s": others,
        "load_before": load,
        "timing": timing,
        "summary": summary,
    }


class Reference:
    """`mujoco.rollout` over the sweep's worlds with the controls the sweep recorded (inputs from `store`).

    A world is rolled out for as many control steps as the sweep stepped it (a Go1 world stops at its
    fall, an Ant world never does), so the worlds are grouped by length, longest first, each group in
    chunks of at most `chunk` worlds: one `rollout` call per chunk, every world in it the same length."""

    def __init__(self, grid: Grid, ckpt: checkpoint.Checkpoint, store_root: Path, chunk: int, nthread: int = 2):
        rob = self.robot = ckpt.robot
        self.planned = records.sweep_keys(grid, ckpt)
        self.chunk, self.nthread = chunk, nthread
        m0 = rob.base
        self.init_spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        self.ctrl_spec = mujoco.mjtState.mjSTATE_CTRL | mujoco.mjtState.mjSTATE_XFRC_APPLIED
        n, nstate = len(self.planned), mujoco.mj_stateSize(m0, self.init_spec)
        self.init = np.empty((n, nstate))
        self.warm = np.empty((n, m0.nv))
        self.ctrl, self.push, self.qpos = [], [], []  # per world: (its control steps, ...)
        by_mu = {}  # one model per friction (a world reads its model, never writes it)
        d = mujoco.MjData(m0)
        with Store(store_root) as store:
            for i, (key, gw) in enumerate(self.planned):
                p = store.payload(key)
                self.ctrl.append(p["ctrl"])
                self.push.append(p["push"])
                self.qpos.append(p["qpos"][1:])
                if gw.world.mu not in by_mu:
                    by_mu[gw.world.mu] = rob.model(gw.world.mu)
                m = by_mu[gw.world.mu]
                mujoco.mj_resetData(m, d)  # as the sweep starts a world: reset_state, then mj_forward
                d.qpos[:], d.qvel[:] = rob.reset_state(gw.world.seed)
                mujoco.mj_forward(m, d)
                mujoco.mj_getState(m, d, self.init[i], self.init_spec)
                self.warm[i] = d.qacc_warmstart
        self.models = [by_mu[gw.world.mu] for _, gw in self.planned]
        self.steps = np.array([len(c) for c in self.ctrl])  # control steps per world
        self.physics_steps = int(self.steps.sum()) * rob.frame_skip
        self.calls = []  # the worlds of each rollout call
        for length in np.unique(self.steps)[::-1]:
            same = np.flatnonzero(self.steps == length)
            if length:
                self.calls += [same[j : j + chunk] for j in range(0, len(same), chunk)]
        self.datas = [mujoco.MjData(m0) for _ in range(nthread)]
        nstep = int(self.steps.max()) * rob.frame_skip
        self.nstate, self.ncontrol = nstate, mujoco.mj_stateSize(m0, self.ctrl_spec)
        # flat, so each call's (worlds, its length, ...) arrays are contiguous views that rollout writes in place
        self.state = np.empty(chunk * nstep * nstate)
        self.control = np.zeros(chunk * nstep * self.ncontrol)
        self.identical = None

    def run(self) -> dict:
        """Roll out every world; time only the `mujoco.rollout` calls."""
        rob = self.robot
        wall = cpu = others = 0.0
        identical = 0
        nu, nbody, skip = rob.base.nu, rob.base.nbody, rob.frame_skip
        for ids in self.calls:
            k, nstep = len(ids), int(self.steps[ids[0]]) * skip
            control = self.control[: k * nstep * self.ncontrol].reshape(k, nstep, self.ncontrol)
            state = self.state[: k * nstep * self.nstate].reshape(k, nstep, self.nstate)
            control[:, :, nu:] = 0.0  # xfrc_applied: only the push body's x, y are set below
            control[:, :, :nu] = np.repeat(np.stack([self.ctrl[i] for i in ids]), skip, axis=1)
            xfrc = control[:, :, nu:].reshape(k, nstep, nbody, 6)
            xfrc[:, :, rob.push_body, :2] = np.repeat(np.stack([self.push[i] for i in ids]), skip, axis=1)
            models = [self.models[i] for i in ids]
            busy0, c0, t0 = machine_busy_s(), time.process_time(), time.perf_counter()
            mj_rollout.rollout(
                models,
                self.datas,
                self.init[ids],
                control,
                control_spec=self.ctrl_spec,
                initial_warmstart=self.warm[ids],
                state=state,
                chunk_size=1,
                persistent_pool=True,
            )
            wall += time.perf_counter() - t0
            cpu += time.process_time() - c0
            others += machine_busy_s() - busy0 - (time.process_time() - c0)
            qpos = state[:, skip - 1 :: skip, 1 : 1 + rob.base.nq]  # after each control step
            identical += sum(bool(np.array_equal(qpos[j], self.qpos[i])) for j, i in enumerate(ids))
        self.identical = identical
        return {"wall_s": wall, "cpu_s": cpu, "others_cpu_s": others}


def gymnasium_loop(ckpt: checkpoint.Checkpoint, worlds, store_root: Path, keys) -> dict:
    import gymnasium

    policy = linear.load(ckpt.path, ANT.obs_dim, ANT.act_dim)
    env = gymnasium.make("Ant-v5")
    u = env.unwrapped
    torso = ANT.torso
    dt = ANT.control_dt
    identical = 0
    t0 = time.perf_counter()
    trajs = []
    for w in worlds:
        u.model.geom_friction[:, 0] = w.mu
        env.reset(seed=w.seed)
        qpos = [u.data.qpos.copy()]
        k0 = int(round(w.push_t0 / dt))
        force = w.push_pct / 100.0 * ANT.body_weight_n()
        angle = 0.0
        for k in range(protocol.n_steps(ANT)):
            if k == k0:
                angle = float(ANT.heading(u.data.qpos)) + np.deg2rad(w.push_dir)
            on = k0 <= k < k0 + protocol.push_steps(ANT)
            u.data.xfrc_applied[torso, 0] = force * portable_math.cos(angle) if on else 0.0
            u.data.xfrc_applied[torso, 1] = force * portable_math.sin(angle) if on else 0.0
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


def engine_scaling(ckpt: checkpoint.Checkpoint, worlds) -> dict:
    """Physics steps/s of the simulator alone (no store) with 1 and 2 threads on the same worlds (the
    steps each world was stepped: a Go1 world stops at its fall)."""
    rob = ckpt.robot
    out = {}
    for nthread in (1, 2):
        t0 = time.perf_counter()
        done = simulation.simulate_worlds(str(ckpt.path), worlds, rob, nthread=nthread)
        steps = sum(len(payload["ctrl"]) for _, payload in done) * rob.frame_skip
        out[f"threads_{nthread}_physics_steps_per_s"] = round(steps / (time.perf_counter() - t0))
    return out


def gymnasium_report(base: dict, grid: Grid, sweep_wall: float) -> dict:
    """The Gymnasium loop's figures, its time extrapolated to the whole grid."""
    per_world = base["wall_s"] / base["worlds"]
    return {
        "gymnasium_loop": {
            "worlds": base["worlds"],
            "wall_s": round(base["wall_s"], 3),
            "physics_steps_per_s": round(base["worlds"] * protocol.n_steps(ANT) * ANT.frame_skip / base["wall_s"]),
            "extrapolated_6400_s": round(per_world * grid.n_rollouts, 1),
            "identical_to_store": base["identical_to_store"],
        },
        "speedup_vs_gymnasium_loop": round(per_world * grid.n_rollouts / sweep_wall, 2),
    }


def median(values) -> float:
    return float(np.median(np.asarray(values, dtype=float)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", default="ant_v0", help="committed checkpoint name (its own robot and command)")
    ap.add_argument("--rounds", type=int, default=2, help="sweeps and reference runs each (alternating)")
    ap.add_argument("--baseline-worlds", type=int, default=48, help="worlds for the Gymnasium loop")
    ap.add_argument("--chunk", type=int, default=400, help="worlds per chunk (the sweep's and the reference's)")
    ap.add_argument(
        "--wait-idle",
        type=float,
        default=0.0,
        help="before each timed run, wait up to this many seconds for the shared machine to be idle",
    )
    ap.add_argument("--n-mu", type=int, default=20, help="friction rows (default grid: 20; fewer for a trial run)")
    ap.add_argument("--n-push", type=int, default=20, help="push columns (default grid: 20)")
    ap.add_argument(
        "--results",
        help="results file name (default: boundary_sweep for ant_v0, boundary_sweep_<checkpoint> otherwise)",
    )
    args = ap.parse_args()
    ckpt = checkpoint.resolve_checkpoint(args.checkpoint)
    rob = ckpt.robot
    ant = rob.spec.env == ANT_V5_ENV  # only the Ant has a Gymnasium env that plays the same worlds
    grid = Grid.build(n_mu=args.n_mu, n_push=args.n_push)
    full_horizon = grid.n_rollouts * protocol.n_steps(rob) * rob.frame_skip
    sweeps, refs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        first = tmp / "store0"
        reference = None
        for r in range(args.rounds):
            order = ("sweep", "reference") if r % 2 == 0 else ("reference", "sweep")
            for side in order:
                waited = wait_idle(args.wait_idle) if args.wait_idle else 0.0
                if side == "sweep":
                    store = first if r == 0 else tmp / f"store{r}"
                    sweeps.append(
                        {
                            **cli_sweep(
                                args.checkpoint,
                                store,
                                tmp / f"out{r}",
                                args.chunk,
                                grid=("--n-mu", args.n_mu, "--n-push", args.n_push),
                            ),
                            "waited_s": waited,
                        }
                    )
                    print(f"round {r}: sweep {sweeps[-1]['wall_s']:.1f} s", file=sys.stderr)
                    if r:
                        with Store(first) as a, Store(store) as b:
                            assert a.fingerprint() == b.fingerprint(), "sweeps of one grid wrote different stores"
                else:
                    if reference is None:
                        reference = Reference(grid, ckpt, first, args.chunk)
                    load = os.getloadavg()[0]
                    refs.append({**reference.run(), "load_before": load, "waited_s": waited})
                    print(f"round {r}: mujoco.rollout {refs[-1]['wall_s']:.1f} s", file=sys.stderr)
        planned = records.sweep_keys(grid, ckpt)
        picks = np.linspace(0, len(planned) - 1, args.baseline_worlds).round().astype(int)
        base = None
        if ant:
            if args.wait_idle:
                wait_idle(args.wait_idle)
            base = gymnasium_loop(ckpt, [planned[i][1].world for i in picks], first, [planned[i][0] for i in picks])
        if args.wait_idle:
            wait_idle(args.wait_idle)
        engine = engine_scaling(ckpt, [gw.world for _, gw in planned[:: max(1, grid.n_rollouts // 256)]])
    steps = reference.physics_steps  # what both sides simulated (a Go1 world stops at its fall)
    sweep_wall, ref_wall = median([s["wall_s"] for s in sweeps]), median([x["wall_s"] for x in refs])
    # a round is quiet when other processes used under a tenth of a core on average during both of its runs
    quiet = [
        r
        for r, (s, x) in enumerate(zip(sweeps, refs))
        if s["others_cpu_s"] < QUIET_CORES * s["wall_s"] and x["others_cpu_s"] < QUIET_CORES * x["wall_s"]
    ]
    report = {
        "benchmark": f"the {grid.n_rollouts:,}-rollout boundary sweep ({len(grid.rows)} mu x {len(grid.cols)} push x "
        f"{grid.seeds_per_cell} seeds, 5 s each) of {ckpt.name} on {rob.spec.name} through "
        "`policylab boundary sweep` into a fresh store, beside mujoco.rollout (2 threads) doing the "
        "same physics open loop" + (", and a plain Gymnasium Ant-v5 step loop on 48 of the same worlds" if ant else ""),
        "script": "benchmarks/bench_boundary_sweep.py",
        "checkpoint": ckpt.as_dict(),
        "robot": rob.spec.name,
        "rollouts": grid.n_rollouts,
        "physics_steps": steps,
        "physics_steps_full_horizon": full_horizon,
        "rounds": args.rounds,
        "sweep_wall_s": round(sweep_wall, 1),
        "sweep_walls_s": [round(s["wall_s"], 1) for s in sweeps],
        "sweep_cpu_s": round(median([s["cpu_s"] for s in sweeps]), 1),
        "sweep_cpus_s": [round(s["cpu_s"], 1) for s in sweeps],
        "sweep_engine_wall_s": round(median([s["timing"]["wall_s"] for s in sweeps]), 1),
        "sweep_physics_steps_per_s": round(steps / sweep_wall),
        "store_write_thread_busy_s": round(median([s["timing"]["store_write_s"] for s in sweeps]), 1),
        "counts": sweeps[0]["summary"]["counts"],
        "store_fingerprint": sweeps[0]["summary"]["store_fingerprint"],
        "mujoco_rollout": {
            "threads": reference.nthread,
            "chunk": args.chunk,
            "controls": REFERENCE_CONTROLS.format(nu=rob.nu, body=rob.spec.push_body, skip=rob.frame_skip),
            "wall_s": round(ref_wall, 1),
            "walls_s": [round(x["wall_s"], 1) for x in refs],
            "cpu_s": round(median([x["cpu_s"] for x in refs]), 1),
            "cpus_s": [round(x["cpu_s"], 1) for x in refs],
            "chunk_size": 1,
            "physics_steps_per_s": round(steps / ref_wall),
            "identical_to_store": reference.identical,
            "worlds": len(reference.planned),
        },
        "ratio_vs_mujoco_rollout": round(sweep_wall / ref_wall, 2),
        "ratio_per_round": [round(s["wall_s"] / x["wall_s"], 2) for s, x in zip(sweeps, refs)],
        "median_ratio_per_round": round(median([s["wall_s"] / x["wall_s"] for s, x in zip(sweeps, refs)]), 2),
        "best_round_walls_s": {
            "sweep": round(min(s["wall_s"] for s in sweeps), 1),
            "mujoco_rollout": round(min(x["wall_s"] for x in refs), 1),
        },
        "cpu_ratio_vs_mujoco_rollout": round(
            median([s["cpu_s"] for s in sweeps]) / median([x["cpu_s"] for x in refs]), 2
        ),
        "load_average_before": {
            "sweeps": [round(s["load_before"], 2) for s in sweeps],
            "mujoco_rollout": [round(x["load_before"], 2) for x in refs],
        },
        "other_processes_cpu_s": {
            "sweeps": [round(s["others_cpu_s"], 1) for s in sweeps],
            "mujoco_rollout": [round(x["others_cpu_s"], 1) for x in refs],
        },
        "quiet_rounds": quiet,
        "ratio_quiet_rounds": round(median([sweeps[r]["wall_s"] / refs[r]["wall_s"] for r in quiet]), 2)
        if quiet
        else None,
        "waited_for_idle_s": round(sum(s["waited_s"] for s in sweeps) + sum(x["waited_s"] for x in refs), 1),
        "goal_ratio_vs_mujoco_rollout": GOAL_RATIO,
        **({} if base is None else gymnasium_report(base, grid, sweep_wall)),
        "engine_only_256_worlds": engine,
        "goal_s": ORIGINAL_A100_S,
        "goal_s_note": "the original study's sweep: 126 s on an A100 (MJX)",
    }
    print(json.dumps(report, indent=2))
    name = args.results or ("boundary_sweep" if args.checkpoint == "ant_v0" else f"boundary_sweep_{ckpt.name}")
    record(name, report, machine_note=f"mujoco {mujoco.__version__}, numpy {np.__version__}")


if __name__ == "__main__":
    main()
