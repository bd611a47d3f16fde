"""The sweep: every world of a friction x push grid played once by a frozen checkpoint, into the store.

Each rollout becomes one store record (the canonical record: outcome decided here, once, with its
trajectory). Worlds whose key is already in the store are skipped, so a killed sweep restarted
with the same arguments ends with the same store as an uninterrupted one: every world is simulated
independently of which chunk, batch position or thread it lands in (tested bitwise).

Record schema (study ``boundary``):

- world: env (the robot spec's), mu, push_pct, push_dir, push_t0, seed, cache_key
  (``v1|mu=...|seed=N``), checkpoint {name, sha256}, mu_idx, push_idx, seed_idx, rollout_index
- policy: {name: "linear" | "onnx" (the policy file's kind), params: {checkpoint, sha256}}
- protocol: see `protocol()`; it names the robot (spec and MJCF sha256) and its physics settings
- outcome: status (survived | failed | diverged), t_fail, fail_reason, diverged_at,
  min_uprightness, min_torso_z, forward_speed_mps
- payload: qpos (n, nq), qvel (n, nv), time (n,), torso_z (n,), uprightness (n,), ctrl (n-1, nu),
  push (n-1, 2) [world-frame newtons applied during step k]; control rate, n = T+1 (Ant: T = 100),
  or fewer when the robot spec stops a rollout at its failure (the Go1: the record ends at the fall)

The robot is a spec file (`policylab.envs.robots`): ``--robot go1|ant|PATH``; its reference (a shipped
name or the spec's path) and identity are in the sweep's store meta, so later stages rebuild it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from policylab.cli.command import Result
from policylab.config import claim_out_dir
from policylab.envs.robots.batch import Robot, robot as load_robot, run_closed_loop as run_robot_loop
from policylab.envs.robots.spec import DEFAULT_ROBOT, available as available_robots
from policylab.errors import BadInput
from policylab.fileio import write_json
from policylab.hashing import canonical_json, hash_obj, sha256_hex
from policylab.policies.files import SUFFIXES, load_policy, policy_kind
from policylab.progress import say
from policylab.rollout.ensure import EnsureStats, Planned, ensure
from policylab.rollout.executors import check_executor
from policylab.rollout.store import Store
from policylab.studies.boundary import failure
from policylab.studies.boundary.constants import CHECKPOINT_DIR, HORIZON_S, PUSH_DURATION_S
from policylab.studies.boundary.requests import SweepRun
from policylab.studies.boundary.world import Grid, GridWorld, World

STUDY = "boundary"
ENV = "gymnasium-mujoco/Ant-v5"  # the Ant's (robot spec `ant`)
RECORD_BYTES = 4096  # a record's JSON row in index.sqlite, with its index entries (upper estimate)
WORLD_SIM_BYTES = 512 * 1024  # resident memory of one world's MjData while it steps (measured ~470 kB)
WORKER_BYTES = 128 * 2**20  # a worker process with the study imported (measured ~80 MB)


@dataclass(frozen=True)
class Checkpoint:
    name: str
    path: Path
    sha256: str
    robot: str = "ant"  # the robot reference: a shipped robot's name or a spec file's path

    def as_dict(self) -> dict:
        return {"name": self.name, "sha256": self.sha256}


def available_checkpoints() -> list[str]:
    return sorted(p.stem for suffix in SUFFIXES for p in CHECKPOINT_DIR.glob(f"*{suffix}"))


def default_checkpoint(robot_ref: str | None) -> str:
    """The committed checkpoint a robot uses when none is named: ``<robot>_v0``."""
    return f"{load_robot(robot_ref).spec.name}_v0"


def robot_of_checkpoint_name(name: str) -> str | None:
    """A committed checkpoint's robot, from its name (``go1_v0`` -> ``go1``)."""
    for r in available_robots():
        if name.startswith(f"{r}_"):
            return r
    return None


def robot_ref(spec: str | None) -> str:
    """What records and metas keep to rebuild a robot: a shipped name, or the resolved spec path."""
    from policylab.envs.robots.spec import spec_path

    if spec is None:
        return DEFAULT_ROBOT
    p = spec_path(spec)
    return spec if "/" not in str(spec) and not str(spec).endswith(".json") else str(p.resolve())


def resolve_checkpoint(spec: str | None, robot: str | None = None) -> Checkpoint:
    """A committed checkpoint by name (e.g. ``go1_v0``, ``ant_v0``) or the path of a policy file (.npz
    linear, .onnx network), checked against the robot (`robot`: a shipped name or spec path; None: the
    committed checkpoint's own robot, else the default robot). Unknown is bad input, and so is a file its
    loader refuses (not a policy file, corrupt, or sizes that do not fit the robot)."""
    if spec is None:
        spec = default_checkpoint(robot)
    path = next((CHECKPOINT_DIR / f"{spec}{sfx}" for sfx in SUFFIXES if (CHECKPOINT_DIR / f"{spec}{sfx}").is_file()),
                None)
    if robot is None and path is not None:
        robot = robot_of_checkpoint_name(spec)
    if path is None:
        path = Path(spec)
    if not path.is_file() or path.suffix.lower() not in SUFFIXES:
        raise BadInput(
            "checkpoint", f"unknown checkpoint {spec!r}; expected one of {', '.join(available_checkpoints())} or the "
            "path of a .npz or .onnx policy file"
        )
    ref = robot_ref(robot)
    rob = load_robot(ref)
    load_policy(path, rob.obs_dim, rob.act_dim, what=f"the {rob.spec.name} robot")
    return Checkpoint(path.stem, path, sha256_hex(path.read_bytes()), ref)


def _robot(rob: Robot | str | None) -> Robot:
    """A Robot from a Robot, a reference, or None (the Ant: what callers written before robot specs mean)."""
    if isinstance(rob, Robot):
        return rob
    return load_robot("ant" if rob is None else rob)


def n_steps(rob: Robot | str | None = None) -> int:
    return int(round(HORIZON_S / _robot(rob).control_dt))


def protocol(rob: Robot | str | None = None) -> dict:
    r = _robot(rob)
    m = r.base
    friction = "sliding friction of every geom set to mu" if r.spec.friction_geoms == "all" else \
        f"sliding friction of geoms {', '.join(r.spec.friction_geoms)} set to mu"
    return {
        "horizon_s": HORIZON_S,
        "n_steps": n_steps(r),
        "control_dt_s": r.control_dt,
        "physics_dt_s": float(m.opt.timestep),
        "frame_skip": r.frame_skip,
        "push_duration_s": PUSH_DURATION_S,
        "push": f"constant horizontal force on the {r.spec.push_body} centre of mass (xfrc_applied), direction "
        "relative to the heading at onset, fixed in the world frame for the window",
        "friction": friction,
        "bodyweight_n": round(r.body_weight_n(), 9),
        "policy_mode": "deterministic",
        "failure": r.thresholds(),
        "stop_at_failure": r.spec.stop_at_failure,
        "robot": r.identity,
        "solver": {"iterations": int(m.opt.iterations), "ls_iterations": int(m.opt.ls_iterations),
                   "integrator": int(m.opt.integrator), "cone": int(m.opt.cone), "impratio": float(m.opt.impratio)},
        "control": r.spec.control.model_dump(exclude_none=True),
    }


def push_steps(rob: Robot | str | None = None) -> int:
    return int(round(PUSH_DURATION_S / _robot(rob).control_dt))


def payload_bytes(rob: Robot | str | None = None) -> int:
    """Bytes of one rollout's payload arrays before compression (the record schema above, at most): float64
    qpos, qvel, time, torso_z and uprightness per state (T + 1), ctrl and push per step (T)."""
    r = _robot(rob)
    t = n_steps(r)
    return 8 * ((t + 1) * (r.nq + r.nv + 3) + t * (r.nu + 2))


def world_record(gw: GridWorld, ckpt: Checkpoint, env: str) -> dict:
    w = gw.world
    return {
        "env": env,
        "mu": w.mu,
        "push_pct": w.push_pct,
        "push_dir": w.push_dir,
        "push_t0": w.push_t0,
        "seed": w.seed,
        "cache_key": w.key,
        "checkpoint": ckpt.as_dict(),
        "mu_idx": gw.mu_idx,
        "push_idx": gw.push_idx,
        "seed_idx": gw.seed_idx,
        "rollout_index": gw.rollout_index,
    }


def policy_record(ckpt: Checkpoint) -> dict:
    kind = SUFFIXES.get(ckpt.path.suffix.lower(), "linear")
    return {"name": kind, "params": {"checkpoint": ckpt.name, "sha256": ckpt.sha256}}


def classify(rob: Robot, qpos: np.ndarray, qvel: np.ndarray, time: np.ndarray) -> dict:
    """The frozen failure rule of `rob` on one stored track."""
    return failure.classify(qpos, qvel, time, rob.control_dt, rule=rob.thresholds(), root_qpos=rob.root_qpos)


def simulate_worlds(checkpoint_path: str, worlds: list[World], nthread: int = 1,
                    robot: Robot | str | None = None) -> list[tuple[dict, dict]]:
    """(outcome, payload) for each world, simulated as one batch. Pure in its inputs. `robot`: the robot
    (None: the committed checkpoint's own robot by name, else the Ant)."""
    if robot is None:
        robot = robot_of_checkpoint_name(Path(checkpoint_path).stem)
    rob = _robot(robot)
    policy = load_policy(checkpoint_path, rob.obs_dim, rob.act_dim, what=f"the {rob.spec.name} robot")
    dt = rob.control_dt
    k0 = np.array([int(round(w.push_t0 / dt)) for w in worlds])
    traj = run_robot_loop(
        rob,
        policy.act,
        [w.mu for w in worlds],
        [w.seed for w in worlds],
        n_steps=n_steps(rob),
        force_n=np.array([w.push_pct / 100.0 * rob.body_weight_n() for w in worlds]),
        dir_deg=np.array([w.push_dir for w in worlds]),
        push_k0=k0,
        n_push=push_steps(rob),
        nthread=nthread,
    )
    out = []
    for i in range(len(worlds)):
        n = int(traj["n_states"][i])
        qpos, qvel, t = traj["qpos"][i, :n], traj["qvel"][i, :n], traj["time"][i, :n]
        payload = {
            "qpos": qpos,
            "qvel": qvel,
            "time": t,
            "torso_z": rob.torso_z(qpos).copy(),
            "uprightness": rob.uprightness(qpos),
            "ctrl": traj["ctrl"][i, : n - 1],
            "push": traj["push"][i, : n - 1],
        }
        out.append((classify(rob, qpos, qvel, t), payload))
    return out


def run_chunk(work: dict) -> list[tuple[dict, dict]]:
    """Executor work: one chunk of worlds (module-level so processes and Ray can pickle it)."""
    worlds = [World(**w) for w in work["worlds"]]
    return simulate_worlds(work["checkpoint_path"], worlds, work["nthread"], robot=work.get("robot"))


@dataclass(frozen=True)
class SweepRunner:
    """The boundary study's batch runner: chunks of `chunk` worlds, each simulated as one batch on
    `nthread` threads (worlds never interact, so the chunking does not change a single bit)."""

    ckpt: Checkpoint
    chunk: int
    nthread: int
    run = staticmethod(run_chunk)

    def pack(self, todo: list[Planned]) -> list[tuple[list[Planned], dict]]:
        units = [todo[i : i + self.chunk] for i in range(0, len(todo), self.chunk)]
        return [(u, {"checkpoint_path": str(self.ckpt.path), "worlds": [vars(p.detail.world) for p in u],
                     "nthread": self.nthread, "robot": self.ckpt.robot}) for u in units]


def planned_sweep(grid: Grid, ckpt: Checkpoint) -> list[Planned]:
    """Every world of `grid` as a planned rollout of `ckpt` (the policy and protocol records are built
    once and shared: only the world differs between rollouts)."""
    policy, proto, env = policy_record(ckpt), protocol(ckpt.robot), load_robot(ckpt.robot).spec.env
    return [Planned(STUDY, world_record(gw, ckpt, env), policy, proto, detail=gw) for gw in grid.worlds()]


def meta_name(ckpt: Checkpoint) -> str:
    return f"boundary/sweep/{ckpt.name}"


def sweep_meta(grid: Grid, ckpt: Checkpoint) -> dict:
    rob = load_robot(ckpt.robot)
    return {"checkpoint": ckpt.as_dict(), "grid": grid.as_dict(), "protocol": protocol(rob), "env": rob.spec.env,
            "robot": {"ref": ckpt.robot, **rob.identity}, "policy_kind": policy_kind(ckpt.path)}


def robot_from_meta(meta: dict, field: str = "store") -> Robot:
    """The robot a stored sweep was made with (its spec must still be the one recorded)."""
    info = meta.get("robot") or {"ref": "ant"}
    try:
        rob = load_robot(info["ref"])
    except BadInput as exc:
        raise BadInput(field, f"the sweep's robot {info['ref']!r} does not load now ({exc.message})") from None
    for k in ("spec_sha256", "mjcf_sha256"):
        if k in info and rob.identity[k] != info[k]:
            raise BadInput(field, f"the robot {info['ref']!r} changed since the sweep ({k} differs); sweep again")
    return rob


def check_resume(store_root: Path, grid: Grid, ckpt: Checkpoint) -> None:
    """A store that already holds a sweep of this checkpoint must hold the same grid and protocol."""
    if not (store_root / "index.sqlite").exists():
        return
    with Store(store_root) as store:
        previous = store.get_meta(meta_name(ckpt))
    if previous is None:
        return
    if previous["checkpoint"] != ckpt.as_dict():
        raise BadInput("checkpoint", f"{store_root} holds a sweep of another {ckpt.name} (sha256 differs)")
    if canonical_json(previous) != canonical_json(sweep_meta(grid, ckpt)):
        g = previous["grid"]
        raise BadInput(
            "grid",
            f"{store_root} holds a sweep of {ckpt.name} on another grid (mu {g['mus'][0]}-{g['mus'][-1]} x "
            f"{len(g['mus'])}, push {g['pushes_pct_bw'][0]}-{g['pushes_pct_bw'][-1]} x {len(g['pushes_pct_bw'])}, "
            f"{g['seeds_per_cell']} seeds per cell) or protocol; use the same grid or another --store",
        )


def sweep_keys(grid: Grid, ckpt: Checkpoint) -> list[tuple[str, GridWorld]]:
    return [(p.key, p.detail) for p in planned_sweep(grid, ckpt)]


def run_sweep(
    grid: Grid,
    ckpt: Checkpoint,
    store_root: Path,
    out: Path,
    *,
    chunk: int,
    executor: str = "local",
    threads: int | None = None,
    workers: int | None = None,
    ray_address: str | None = None,
    max_chunks: int | None = None,
) -> dict:
    """Run the missing worlds of `grid` and write the sweep summary to `out`; returns the summary.

    `max_chunks` stops after that many chunks (a deliberate interruption, used by resume tests).
    """
    check_executor(executor, ray_address)
    check_resume(store_root, grid, ckpt)
    config = {"checkpoint": ckpt.as_dict(), "grid": grid.as_dict(), "store": str(store_root), "robot": ckpt.robot}
    claim_out_dir(out, config)
    nthread = threads or (2 if executor == "local" else 1)
    t_start = time.perf_counter()
    planned = planned_sweep(grid, ckpt)
    stats = EnsureStats()
    with Store(store_root) as store:
        store.set_meta(meta_name(ckpt), sweep_meta(grid, ckpt))
        ensure(store, planned, SweepRunner(ckpt, chunk, nthread), executor=executor, workers=workers,
               ray_address=ray_address, label=f"sweep {ckpt.name}", unit="chunk", max_units=max_chunks, stats=stats)
        summary = summarize(store, [(p.key, p.detail) for p in planned], grid, ckpt)
    ran, write_s = stats.ran, stats.write_s
    wall = time.perf_counter() - t_start
    write_json(out / "sweep.json", summary)
    timing = {
        "wall_s": round(wall, 3),
        "store_write_s": round(write_s, 3),
        "rollouts_run": ran,
        # full-horizon physics steps (an upper bound when the robot stops rollouts at their failure)
        "physics_steps": ran * n_steps(ckpt.robot) * load_robot(ckpt.robot).frame_skip,
        "physics_steps_per_s": round(ran * n_steps(ckpt.robot) * load_robot(ckpt.robot).frame_skip / wall, 1)
        if ran else None,
        "executor": executor,
        "threads_per_task": nthread,
        "chunk": chunk,
    }
    write_json(out / "timing.json", timing)
    return {**summary, "timing": timing}


def summarize(store: Store, planned: list[tuple[str, GridWorld]], grid: Grid, ckpt: Checkpoint) -> dict:
    """Deterministic summary of the sweep's records (counts, fingerprint); no wall times."""
    counts = {"survived": 0, "failed": 0, "diverged": 0, "missing": 0}
    fp = store.fingerprint()
    for key, _ in planned:
        rec = store.get(key)
        counts["missing" if rec is None else rec.outcome["status"]] += 1
    return {
        "study": STUDY,
        "checkpoint": ckpt.as_dict(),
        "grid": grid.as_dict(),
        "protocol": protocol(ckpt.robot),
        "robot": ckpt.robot,
        "counts": counts,
        "complete": counts["missing"] == 0,
        "store_fingerprint": hash_obj([[k, fp.get(k)] for k, _ in planned], length=32),
    }


def run(req: SweepRun) -> Result:
    """`policylab boundary sweep`: run the grid's missing worlds into the store, summarise into OUT."""
    ckpt = resolve_checkpoint(req.checkpoint, req.robot)
    grid = Grid.build((req.mu_min, req.mu_max), req.n_mu, (req.push_min, req.push_max), req.n_push,
                      req.seeds_per_cell, req.push_dir, req.push_t0)
    result = run_sweep(grid, ckpt, req.store, req.out, executor=req.executor, chunk=req.chunk, threads=req.threads,
                       workers=req.workers, ray_address=req.ray_address)
    c, t = result["counts"], result["timing"]
    return Result(req.out / "sweep.json", headlines=(
        f"{ckpt.name}: survived {c['survived']}, failed {c['failed']}, diverged {c['diverged']}, missing "
        f"{c['missing']}; {t['rollouts_run']} run in {t['wall_s']:.1f} s",))
