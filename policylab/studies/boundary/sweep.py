"""The sweep: every world of a friction x push grid played once by a frozen checkpoint, into the store.

Each rollout becomes one store record (the canonical record: outcome decided here, once, with its
trajectory). Worlds whose key is already in the store are skipped, so a killed sweep restarted
with the same arguments ends with the same store as an uninterrupted one: every world is simulated
independently of which chunk, batch position or thread it lands in (tested bitwise).

Record schema (study ``boundary``):

- world: env, mu, push_pct, push_dir, push_t0, seed, cache_key (``v1|mu=...|seed=N``),
  checkpoint {name, sha256}, mu_idx, push_idx, seed_idx, rollout_index
- policy: {name: "ant_linear", params: {checkpoint, sha256}}
- protocol: see `protocol()`
- outcome: status (survived | failed | diverged), t_fail, fail_reason, diverged_at,
  min_uprightness, min_torso_z, forward_speed_mps
- payload: qpos (T+1, 15), qvel (T+1, 14), time (T+1,), torso_z (T+1,), uprightness (T+1,),
  ctrl (T, 8), push (T, 2) [world-frame newtons applied during step k]; T = 100, control rate
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from policylab.cli.command import Result
from policylab.config import claim_out_dir
from policylab.envs import ant
from policylab.errors import BadInput
from policylab.fileio import write_json
from policylab.hashing import canonical_json, hash_obj, sha256_hex
from policylab.policies import ant_linear
from policylab.progress import say
from policylab.rollout.ensure import EnsureStats, Planned, ensure
from policylab.rollout.executors import check_executor
from policylab.rollout.store import Store
from policylab.studies.boundary import failure
from policylab.studies.boundary.constants import CHECKPOINT_DIR, HORIZON_S, PUSH_DURATION_S
from policylab.studies.boundary.requests import SweepRun
from policylab.studies.boundary.simulate import run_closed_loop
from policylab.studies.boundary.world import Grid, GridWorld, World

STUDY = "boundary"
ENV = "gymnasium-mujoco/Ant-v5"
RECORD_BYTES = 4096  # a record's JSON row in index.sqlite, with its index entries (upper estimate)
WORLD_SIM_BYTES = 512 * 1024  # resident memory of one world's MjData while it steps (measured ~470 kB)
WORKER_BYTES = 128 * 2**20  # a worker process with the study imported (measured ~80 MB)


@dataclass(frozen=True)
class Checkpoint:
    name: str
    path: Path
    sha256: str

    def as_dict(self) -> dict:
        return {"name": self.name, "sha256": self.sha256}


def available_checkpoints() -> list[str]:
    return sorted(p.stem for p in CHECKPOINT_DIR.glob("*.npz"))


def resolve_checkpoint(spec: str) -> Checkpoint:
    """A committed checkpoint by name (e.g. ``ant_v0``) or a path to a .npz; unknown is bad input, and
    so is a file that `ant_linear.load` refuses (not an .npz, corrupt, or arrays that do not fit the Ant)."""
    path = CHECKPOINT_DIR / f"{spec}.npz"
    if not path.is_file():
        path = Path(spec)
    if not path.is_file() or path.suffix != ".npz":
        raise BadInput(
            "checkpoint", f"unknown checkpoint {spec!r}; expected one of {', '.join(available_checkpoints())} or a .npz path"
        )
    ant_linear.load(path)
    return Checkpoint(path.stem, path, sha256_hex(path.read_bytes()))


def n_steps() -> int:
    return int(round(HORIZON_S / ant.control_dt()))


def protocol() -> dict:
    return {
        "horizon_s": HORIZON_S,
        "n_steps": n_steps(),
        "control_dt_s": ant.control_dt(),
        "physics_dt_s": float(ant.model().opt.timestep),
        "frame_skip": ant.FRAME_SKIP,
        "push_duration_s": PUSH_DURATION_S,
        "push": "constant horizontal force on the torso centre of mass (xfrc_applied), direction relative "
        "to the heading at onset, fixed in the world frame for the window",
        "friction": "sliding friction of every geom set to mu",
        "bodyweight_n": round(ant.body_weight_n(), 9),
        "policy_mode": "deterministic",
        "failure": failure.thresholds(),
    }


def push_steps() -> int:
    return int(round(PUSH_DURATION_S / ant.control_dt()))


def payload_bytes() -> int:
    """Bytes of one rollout's payload arrays before compression (the record schema above): float64
    qpos, qvel, time, torso_z and uprightness per state (T + 1), ctrl and push per step (T)."""
    m, t = ant.model(), n_steps()
    return 8 * ((t + 1) * (m.nq + m.nv + 3) + t * (m.nu + 2))


def world_record(gw: GridWorld, ckpt: Checkpoint) -> dict:
    w = gw.world
    return {
        "env": ENV,
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
    return {"name": "ant_linear", "params": {"checkpoint": ckpt.name, "sha256": ckpt.sha256}}


def simulate_worlds(checkpoint_path: str, worlds: list[World], nthread: int = 1) -> list[tuple[dict, dict]]:
    """(outcome, payload) for each world, simulated as one batch. Pure in its inputs."""
    policy = ant_linear.load(checkpoint_path)
    dt = ant.control_dt()
    k0 = np.array([int(round(w.push_t0 / dt)) for w in worlds])
    traj = run_closed_loop(
        policy.act,
        [w.mu for w in worlds],
        [w.seed for w in worlds],
        n_steps=n_steps(),
        force_n=np.array([w.push_pct / 100.0 * ant.body_weight_n() for w in worlds]),
        dir_deg=np.array([w.push_dir for w in worlds]),
        push_k0=k0,
        n_push=push_steps(),
        nthread=nthread,
    )
    out = []
    for i in range(len(worlds)):
        qpos, qvel, t = traj["qpos"][i], traj["qvel"][i], traj["time"][i]
        payload = {
            "qpos": qpos,
            "qvel": qvel,
            "time": t,
            "torso_z": qpos[:, 2].copy(),
            "uprightness": ant.uprightness(qpos),
            "ctrl": traj["ctrl"][i],
            "push": traj["push"][i],
        }
        out.append((failure.classify(qpos, qvel, t, dt), payload))
    return out


def run_chunk(work: dict) -> list[tuple[dict, dict]]:
    """Executor work: one chunk of worlds (module-level so processes and Ray can pickle it)."""
    worlds = [World(**w) for w in work["worlds"]]
    return simulate_worlds(work["checkpoint_path"], worlds, work["nthread"])


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
                     "nthread": self.nthread}) for u in units]


def planned_world(gw: GridWorld, ckpt: Checkpoint) -> Planned:
    return Planned(STUDY, world_record(gw, ckpt), policy_record(ckpt), protocol(), detail=gw)


def meta_name(ckpt: Checkpoint) -> str:
    return f"boundary/sweep/{ckpt.name}"


def sweep_meta(grid: Grid, ckpt: Checkpoint) -> dict:
    return {"checkpoint": ckpt.as_dict(), "grid": grid.as_dict(), "protocol": protocol(), "env": ENV}


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
    return [(planned_world(gw, ckpt).key, gw) for gw in grid.worlds()]


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
    config = {"checkpoint": ckpt.as_dict(), "grid": grid.as_dict(), "store": str(store_root)}
    claim_out_dir(out, config)
    nthread = threads or (2 if executor == "local" else 1)
    t_start = time.perf_counter()
    planned = [planned_world(gw, ckpt) for gw in grid.worlds()]
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
        "physics_steps": ran * n_steps() * ant.FRAME_SKIP,
        "physics_steps_per_s": round(ran * n_steps() * ant.FRAME_SKIP / wall, 1) if ran else None,
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
        "protocol": protocol(),
        "counts": counts,
        "complete": counts["missing"] == 0,
        "store_fingerprint": hash_obj([[k, fp.get(k)] for k, _ in planned], length=32),
    }


def run(req: SweepRun) -> Result:
    """`policylab boundary sweep`: run the grid's missing worlds into the store, summarise into OUT."""
    ckpt = resolve_checkpoint(req.checkpoint)
    grid = Grid.build((req.mu_min, req.mu_max), req.n_mu, (req.push_min, req.push_max), req.n_push,
                      req.seeds_per_cell, req.push_dir, req.push_t0)
    result = run_sweep(grid, ckpt, req.store, req.out, executor=req.executor, chunk=req.chunk, threads=req.threads,
                       workers=req.workers, ray_address=req.ray_address)
    c, t = result["counts"], result["timing"]
    return Result(req.out / "sweep.json", headlines=(
        f"{ckpt.name}: survived {c['survived']}, failed {c['failed']}, diverged {c['diverged']}, missing "
        f"{c['missing']}; {t['rollouts_run']} run in {t['wall_s']:.1f} s",))
