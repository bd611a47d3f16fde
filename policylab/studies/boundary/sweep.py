"""The sweep: every world of a grid played once by a frozen checkpoint, into the store.

Record schema: docs/boundary.md, "Store records"; `plan(request)` resolves everything before the first write."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

from policylab.config import check_resources, claim_out_dir
from policylab.fileio import write_json
from policylab.hashing import hash_obj
from policylab.result import Result
from policylab.rollout.ensure import EnsureStats, ensure
from policylab.rollout.executors import check_executor, default_workers
from policylab.rollout.store import Store
from policylab.studies.boundary.checkpoint import Checkpoint
from policylab.studies.boundary.failure import before_push, walking_warning
from policylab.studies.boundary.kept_files import keep
from policylab.studies.boundary.protocol import (
    WORKER_BYTES,
    WORLD_SIM_BYTES,
    n_steps,
    payload_bytes,
    protocol,
    stored_bytes,
)
from policylab.studies.boundary.records import (
    DIVERGED_CAUSES,
    STUDY,
    check_resume,
    check_resume_of,
    diverged_cause,
    meta_name,
    planned_sweep,
    resolve_in_store,
    sweep_meta,
)
from policylab.studies.boundary.requests import SweepRequest
from policylab.studies.boundary.simulation import SweepRunner
from policylab.studies.boundary.world import Grid, GridWorld


@dataclass(frozen=True)
class Plan:
    """A sweep, resolved once and checked (`plan`): what the stage runs, with nothing left to resolve."""

    ckpt: Checkpoint  # the policy on its robot, with the command it plays
    grid: Grid
    store: Path  # resolved
    out: Path
    chunk: int
    executor: str = "local"
    threads: int | None = None
    workers: int | None = None
    ray_address: str | None = None

    @property
    def config(self) -> dict:
        """What OUT/config.json records (a rerun of the same sweep resumes, any other is refused)."""
        rob = self.ckpt.robot
        command = {} if rob.uncommanded is None else {"command": rob.spec.command}  # set by --command
        return {
            "checkpoint": self.ckpt.as_dict(),
            "grid": self.grid.as_dict(),
            "store": str(self.store.resolve()),
            "robot": rob.ref,
            **command,
        }

    def needs(self) -> tuple[int, int]:
        """Memory: the chunks simulating at once (one in this process, or one per worker process), each
        world with its MjData, trajectory and payload copy, plus the finished chunk waiting for the store
        writer and the worker processes themselves. Disk: every world as stored (`protocol.stored_bytes`),
        and the store's copies of the policy and spec files (`kept_files`)."""
        rob = self.ckpt.robot
        per = payload_bytes(rob)
        workers = 0 if self.executor == "local" else self.workers or default_workers()
        simulating = max(workers, 1) * self.chunk * (WORLD_SIM_BYTES + 2 * per)
        memory = simulating + self.chunk * 2 * per + workers * WORKER_BYTES
        kept = self.ckpt.path.stat().st_size + rob.spec_file.stat().st_size
        return memory, self.grid.n_rollouts * stored_bytes(rob, self.grid.push_t0) + kept


def checked(p: Plan) -> Plan:
    """`p` once its executor options and the store's sweep of the same checkpoint (same grid and protocol,
    if any) are checked; nothing is written."""
    check_executor(p.executor, p.ray_address)
    check_resume(p.store, p.grid, p.ckpt)
    return p


def plan(req: SweepRequest) -> Plan:
    """Resolve and check everything the request model could not, once: the checkpoint on its robot with its
    command (a name swept into the store is that sweep's policy, `records.resolve_in_store`), the grid at
    its axes' resolutions, the executor, a resumed sweep's grid and protocol, and what the machine can
    hold. `BadInput` naming the field; nothing is written."""
    ckpt = resolve_in_store(req.checkpoint, req.robot, req.command, req.store)
    grid = Grid.build(
        (req.mu_min, req.mu_max),
        req.n_mu,
        (req.push_min, req.push_max),
        req.n_push,
        req.seeds_per_cell,
        req.push_dir,
        req.push_t0,
        req.rows,
        req.cols,
        req.set,
        fields=("n_mu", "n_push"),
    )
    p = checked(
        Plan(ckpt, grid, req.store, req.out, req.chunk, req.executor, req.threads, req.workers, req.ray_address)
    )
    check_resources(*p.needs(), req.store, "/".join(req.SIZE_FIELDS))
    return p


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
    """`sweep` of a grid and a checkpoint already resolved (after `checked`): the library's way in."""
    p = checked(Plan(ckpt, grid, store_root, out, chunk, executor, threads, workers, ray_address))
    return sweep(p, max_chunks=max_chunks)


def sweep(p: Plan, *, max_chunks: int | None = None) -> dict:
    """Claim OUT, run the missing worlds of the plan's grid and write the sweep summary to OUT; returns the
    summary.

    `max_chunks` stops after that many chunks (a deliberate interruption, used by resume tests).
    """
    grid, ckpt, store_root, out = p.grid, p.ckpt, p.store, p.out
    claim_out_dir(out, p.config)
    nthread = p.threads or (2 if p.executor == "local" else 1)
    t_start = time.perf_counter()
    planned = planned_sweep(grid, ckpt)
    stats = EnsureStats()
    with Store(store_root) as store:
        with store.exclusive():  # checked again under the lock: two sweeps cannot both pass the check
            check_resume_of(store, grid, ckpt)
            store.set_meta(meta_name(ckpt.name), sweep_meta(grid, ckpt))
            keep(store, ckpt)
        ensure(
            store,
            planned,
            SweepRunner(ckpt, p.chunk, nthread),
            executor=p.executor,
            workers=p.workers,
            ray_address=p.ray_address,
            label=f"sweep {ckpt.name}",
            unit="chunk",
            max_units=max_chunks,
            stats=stats,
        )
        summary = summarize(store, [(q.key, q.detail) for q in planned], grid, ckpt)
    ran, write_s = stats.ran, stats.write_s
    wall = time.perf_counter() - t_start
    write_json(out / "sweep.json", summary)
    timing = {
        "wall_s": round(wall, 3),
        "store_write_s": round(write_s, 3),
        "rollouts_run": ran,
        # full-horizon physics steps (an upper bound when the robot stops rollouts at their failure)
        "physics_steps": ran * n_steps(ckpt.robot) * ckpt.robot.frame_skip,
        "physics_steps_per_s": round(ran * n_steps(ckpt.robot) * ckpt.robot.frame_skip / wall, 1) if ran else None,
        "executor": p.executor,
        "threads_per_task": nthread,
        "chunk": p.chunk,
    }
    write_json(out / "timing.json", timing)
    return {**summary, "timing": timing}


def summarize(store: Store, planned: list[tuple[str, GridWorld]], grid: Grid, ckpt: Checkpoint) -> dict:
    """Deterministic summary of the sweep's records (counts, fingerprint); no wall times."""
    counts = {"survived": 0, "failed": 0, "diverged": 0, "missing": 0}
    causes = {c: 0 for c in DIVERGED_CAUSES}
    early = 0
    fp = store.fingerprint()
    for key, gw in planned:
        rec = store.get(key)
        counts["missing" if rec is None else rec.outcome["status"]] += 1
        if rec is not None and diverged_cause(rec.outcome):
            causes[diverged_cause(rec.outcome)] += 1
        if rec is not None:
            early += before_push(rec.outcome["status"], rec.outcome["t_fail"], gw.world.push_t0)
    warning = walking_warning(early, len(planned) - counts["missing"], grid.push_t0)
    return {
        "study": STUDY,
        "checkpoint": ckpt.as_dict(),
        "grid": grid.as_dict(),
        "protocol": protocol(ckpt.robot),
        "robot": ckpt.robot.ref,
        "counts": counts,
        "diverged_causes": causes,
        "failed_before_push": early,
        "warnings": [warning] if warning else [],
        "complete": counts["missing"] == 0,
        "store_fingerprint": hash_obj([[k, fp.get(k)] for k, _ in planned], length=32),
    }


def run(req: SweepRequest) -> Result:
    """`policylab boundary sweep`: run the grid's missing worlds into the store, summarise into OUT."""
    p = plan(req)
    ckpt = p.ckpt
    result = sweep(p)
    for warning in result["warnings"]:
        print(f"policylab: warning: {warning}", file=sys.stderr)
    c, t = result["counts"], result["timing"]
    return Result(
        req.out / "sweep.json",
        headlines=(
            f"{ckpt.name}: survived {c['survived']}, failed {c['failed']}, diverged {c['diverged']}"
            + (f" ({result['diverged_causes']['action']} from a non-finite action)" if c["diverged"] else "")
            + f", missing {c['missing']}; {t['rollouts_run']} run in {t['wall_s']:.1f} s",
        ),
    )
