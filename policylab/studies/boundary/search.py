"""`policylab boundary search`: each row's boundary from a fraction of a grid's rollouts
(docs/boundary.md, "Search")."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from policylab.config import claim_out_dir
from policylab.fileio import write_json
from policylab.hashing import hash_obj
from policylab.result import Result
from policylab.rollout.ensure import EnsureStats, Planned, ensure
from policylab.rollout.seeds import SEARCH_SEED_SCHEME, search_seed
from policylab.rollout.store import Store
from policylab.studies.boundary import crossing
from policylab.studies.boundary.axes import AXES, Axis, fixed_axes, parse_rows
from policylab.studies.boundary.checkpoint import Checkpoint, policy_record
from policylab.studies.boundary.constants import DEFAULT_DIR, DEFAULT_T0
from policylab.studies.boundary.kept_files import keep
from policylab.studies.boundary.older_records import ANALYSIS_FORMAT
from policylab.studies.boundary.protocol import protocol
from policylab.studies.boundary.records import STUDY, resolve_in_store, search_world_record, world_record
from policylab.studies.boundary.requests import SearchRequest
from policylab.studies.boundary.simulation import SweepRunner
from policylab.studies.boundary.world import Grid, GridWorld, World, friction_by_push

PUSH = AXES["push"]
METHOD = {
    "model": "along the push axis, survival is a decreasing logistic curve with free crossing and scale "
    "(the monotonicity assumption); rows that contradict it are flagged",
    "interval": "95% interval of the crossing: 2.5% and 97.5% quantiles of the likelihood integrated over the "
    "curve's scale (flat in log scale) on a grid of crossings over the push range extended by half its "
    "span each side (flat prior); estimate: its median",
    "design": "batched probabilistic bisection: each round, a row's batch of pushes are the (i + 1/2) / batch "
    "quantiles of its crossing's distribution raised to the power 1/2 (spread wider than it, so the "
    "curve's scale is learned too), on the push lattice, inside the range",
    "stopping": f"a row stops when its interval is no wider than the target, or lies wholly beyond one end of the "
    f"push range (no crossing in range), never before {crossing.MIN_ROLLOUTS} rollouts; the budget "
    "stops the rest (widest interval served first)",
    "monotonicity": "rollouts sorted by push cut into groups of 8; one-sided Fisher exact test of every later group "
    f"surviving more than an earlier one, Bonferroni over the pairs, flagged at p < "
    f"{crossing.MONOTONE_P}",
    "diverged": "diverged rollouts are left out of the fit and counted",
}


@dataclass
class Row:
    index: int
    values: dict[str, float]  # row axis name -> value
    x: list[float] = field(default_factory=list)  # pushes of the rollouts at risk
    y: list[int] = field(default_factory=list)  # 1 = survived
    keys: list[str] = field(default_factory=list)  # every rollout's key, in the order planned
    diverged: int = 0
    shared: int = 0  # rollouts that are grid worlds (the grid's records)
    off_grid: int = 0  # rollouts seeded from the search range so far
    per_push: dict[float, int] = field(default_factory=dict)
    decision: crossing.Decision | None = None
    stopped: str | None = None

    @property
    def rollouts(self) -> int:
        return len(self.keys)


class Planner:
    """Turns a row's next pushes into planned rollouts: grid worlds where the search shares the grid's,
    search-range seeds elsewhere."""

    def __init__(self, ckpt: Checkpoint, block: int, fixed: dict[str, float]):
        self.ckpt, self.block, self.fixed = ckpt, block, fixed
        self.grid = Grid.build()
        self.policy, self.proto, self.env = policy_record(ckpt), protocol(ckpt.robot), ckpt.robot.spec.env

    def _grid_world(self, row: Row, push: float) -> GridWorld | None:
        if self.block != 0 or set(row.values) != {"friction"} or self.fixed:
            return None
        mu = row.values["friction"]
        if mu not in self.grid.rows or push not in self.grid.cols:
            return None
        m = row.per_push.get(push, 0)
        if m >= self.grid.seeds_per_cell:
            return None
        i, j = self.grid.rows.index(mu), self.grid.cols.index(push)
        world = World(mu, push, self.grid.push_dir, self.grid.push_t0, self.grid.seed(i, j, m))
        return GridWorld(world, i, j, m, self.grid.rollout_index(i, j, m))

    def plan(self, row: Row, push: float) -> Planned:
        gw = self._grid_world(row, push)
        row.per_push[push] = row.per_push.get(push, 0) + 1
        if gw is not None:
            row.shared += 1
            return Planned(STUDY, world_record(gw, self.ckpt, self.env, self.grid), self.policy, self.proto, detail=gw)
        values = {"push_dir": DEFAULT_DIR, "push_t0": DEFAULT_T0, "friction": 1.0, **self.fixed, **row.values}
        fields = {AXES[name].field: v for name, v in values.items()}
        seed = search_seed(self.block, row.index, row.off_grid)
        row.off_grid += 1
        world = World(push_pct=push, seed=seed, **fields)
        return Planned(
            STUDY,
            search_world_record(world, self.ckpt, self.env),
            self.policy,
            self.proto,
            detail=GridWorld(world, -1, -1, -1, -1),
        )


def run_search(
    ckpt: Checkpoint,
    rows_spec: list[tuple[Axis, tuple[float, ...]]],
    fixed: dict[str, float],
    *,
    push_range: tuple[float, float],
    level: float,
    target_width: float,
    budget: int,
    batch: int,
    block: int,
    store_root: Path,
    chunk: int = 400,
    threads: int = 2,
    max_rounds: int | None = None,
) -> dict:
    """The search (`max_rounds` stops early: a deliberate interruption for the resume tests)."""
    lo, hi = push_range
    combos = list(itertools.product(*[vals for _, vals in rows_spec]))
    rows = [Row(i, {a.name: v for (a, _), v in zip(rows_spec, combo)}) for i, combo in enumerate(combos)]
    planner = Planner(ckpt, block, fixed)
    snap = lambda v: PUSH.check(v)  # noqa: E731 - the push lattice
    spent, rounds = 0, 0
    stats = EnsureStats()
    with Store(store_root) as store:
        keep(store, ckpt)
        while True:
            want = []
            for row in rows:
                if row.stopped:
                    continue
                row.decision = crossing.decide(
                    row.x,
                    row.y,
                    lo,
                    hi,
                    level=level,
                    batch=batch,
                    target_width=target_width,
                    snap=snap,
                    resolution=PUSH.resolution,
                )
                if row.decision.done:
                    row.stopped = "beyond range" if row.decision.status != crossing.LOCATED else "width"
                else:
                    want.append(row)
            # the budget serves the widest intervals first when it cannot serve every row
            want.sort(key=lambda r: (-r.decision.fit.width, r.index))
            served = []
            for row in want:
                if spent + batch <= budget:
                    served.append(row)
                    spent += batch
                else:
                    row.stopped = "budget"
            if not served or (max_rounds is not None and rounds >= max_rounds):
                break
            served.sort(key=lambda r: r.index)
            planned = []
            for row in served:
                for push in row.decision.next:
                    p = planner.plan(row, push)
                    row.keys.append(p.key)
                    planned.append((row, push, p))
            records = ensure(
                store,
                [p for _, _, p in planned],
                SweepRunner(ckpt, chunk, threads),
                label=f"search round {rounds + 1}",
                unit="chunk",
                stats=stats,
            )
            for row, push, p in planned:
                status = records[p.key].outcome["status"]
                if status == "diverged":
                    row.diverged += 1
                else:
                    row.x.append(push)
                    row.y.append(int(status == "survived"))
            rounds += 1
        complete = not any(r.stopped is None for r in rows)
        fp = store.fingerprint()
        grid = grid_comparison(store, ckpt, rows, level) if level == 0.5 else None
    return summarize(
        ckpt,
        rows,
        rows_spec,
        fixed,
        push_range=push_range,
        level=level,
        target_width=target_width,
        budget=budget,
        batch=batch,
        block=block,
        rounds=rounds,
        complete=complete,
        fingerprint=hash_obj([[k, fp.get(k)] for r in rows for k in r.keys], length=32),
        grid=grid,
    ), stats


def row_summary(row: Row, lo: float, hi: float) -> dict:
    d = row.decision
    f = d.fit
    x, y = np.asarray(row.x), np.asarray(row.y)
    evidence = [
        {"push_pct_bw": float(p), "n": int((x == p).sum()), "survived": int(y[x == p].sum())} for p in np.unique(x)
    ]
    out = {
        "row": row.index,
        "values": row.values,
        "status": d.status,
        "stopped": row.stopped,
        "estimate_pct_bw": round(f.point, 3),
        "ci95_pct_bw": [round(f.lo, 3), round(f.hi, 3)],
        "open": [f.open_below, f.open_above],
        "width_pct_bw": None if np.isinf(f.width) else round(f.width, 3),
        "rollouts": row.rollouts,
        "at_risk": len(row.x),
        "survived": int(y.sum()),
        "diverged": row.diverged,
        "grid_worlds": row.shared,
        "monotonicity": crossing.monotonicity(row.x, row.y),
        "evidence": evidence,
    }
    if d.status == crossing.BELOW:
        at = [e for e in evidence if e["push_pct_bw"] == lo]
        out["note"] = (
            f"survival below the level already at the smallest push ({lo:g} %BW: "
            f"{at[0]['survived']}/{at[0]['n']} survived)"
            if at
            else "crossing below the push range"
        )
    elif d.status == crossing.ABOVE:
        at = [e for e in evidence if e["push_pct_bw"] == hi]
        out["note"] = (
            f"survival above the level up to the largest push ({hi:g} %BW: {at[0]['survived']}/{at[0]['n']} survived)"
            if at
            else "crossing above the push range"
        )
    else:
        out["note"] = "" if row.stopped == "width" else "budget spent before the interval reached the target width"
    return out


def grid_comparison(store: Store, ckpt: Checkpoint, rows: list[Row], level: float) -> dict | None:
    """The store's sweep of this checkpoint, when it holds a complete one: each friction row's boundary as
    reduce computes it from the grid (bootstrap over seeds, 2000 resamples, seed 0), beside the search's."""
    from policylab.errors import BadInput
    from policylab.studies.boundary.reduce import boundaries, load_sweep, survival_codes, survival_fraction

    try:
        sweep = load_sweep(store, ckpt.name, keep_diverged=True)
    except BadInput:
        return None
    if sweep.push_dir != DEFAULT_DIR or sweep.push_t0 != DEFAULT_T0 or not friction_by_push(sweep.grid):
        return None  # not a friction x push map
    by_mu = {b["row"]: b for b in boundaries(sweep, resamples=2000, seed=0)}
    survival = [
        [
            None if np.isnan(v := float(survival_fraction(survival_codes(sweep.cells[(i, j)])))) else v
            for j in range(len(sweep.cols))
        ]
        for i in range(len(sweep.rows))
    ]
    out = []
    for row in rows:
        if set(row.values) != {"friction"} or row.values["friction"] not in by_mu:
            continue
        b = by_mu[row.values["friction"]]
        f = row.decision.fit
        grid_point = b["median"]
        out.append(
            {
                "row": row.index,
                "mu": row.values["friction"],
                "grid_status": b["status"],
                "grid_median_pct_bw": grid_point,
                "grid_ci95_pct_bw": b["ci95"],
                "search_covers_grid_median": None if grid_point is None else bool(f.lo <= grid_point <= f.hi),
            }
        )
    return {
        "grid": sweep.grid,
        "rollouts": sweep.seeds_per_cell * len(sweep.rows) * len(sweep.cols),
        "survival": survival,
        "rows": out,
    }


def summarize(
    ckpt: Checkpoint,
    rows: list[Row],
    rows_spec,
    fixed,
    *,
    push_range,
    level,
    target_width,
    budget,
    batch,
    block,
    rounds,
    complete,
    fingerprint,
    grid,
) -> dict:
    lo, hi = push_range
    out_rows = [row_summary(r, lo, hi) for r in rows]
    spent = sum(r.rollouts for r in rows)
    return {
        "format": ANALYSIS_FORMAT,
        "study": STUDY,
        "checkpoint": ckpt.as_dict(),
        "robot": ckpt.robot.ref,
        "protocol": protocol(ckpt.robot),
        "row_axes": {a.name: list(vals) for a, vals in rows_spec},
        "fixed": fixed,
        "push_range_pct_bw": [lo, hi],
        "level": level,
        "target_width_pct_bw": target_width,
        "budget": budget,
        "batch": batch,
        "seed_block": block,
        "seed_scheme": SEARCH_SEED_SCHEME,
        "method": METHOD,
        "rows": out_rows,
        "totals": {
            "rows": len(rows),
            "rollouts": spent,
            "grid_worlds": sum(r.shared for r in rows),
            "located": sum(r["status"] == crossing.LOCATED and r["stopped"] == "width" for r in out_rows),
            "below_range": sum(r["status"] == crossing.BELOW for r in out_rows),
            "above_range": sum(r["status"] == crossing.ABOVE for r in out_rows),
            "budget_stopped": sum(r["stopped"] == "budget" for r in out_rows),
            "non_monotone": sum(r["monotonicity"]["flagged"] for r in out_rows),
            "diverged": sum(r.diverged for r in rows),
            "rounds": rounds,
        },
        "complete": complete,
        "grid_comparison": grid,
        "store_fingerprint": fingerprint,
    }


@dataclass(frozen=True)
class Plan:
    """A search, resolved once (`plan`): the checkpoint on its robot, the rows and the held axes."""

    req: SearchRequest
    ckpt: Checkpoint
    rows: list[tuple[Axis, tuple[float, ...]]]
    fixed: dict[str, float]

    @property
    def config(self) -> dict:
        """What OUT/config.json records."""
        req = self.req
        return {
            "search": True,
            "checkpoint": self.ckpt.as_dict(),
            "robot": self.ckpt.robot.ref,
            "rows": req.rows,
            "set": req.set,
            "push_range": [req.push_min, req.push_max],
            "level": req.level,
            "target_width": req.target_width,
            "budget": req.budget,
            "batch": req.batch,
            "seed_block": req.seed_block,
            "store": str(req.store.resolve()),
        }


def plan(req: SearchRequest) -> Plan:
    """Resolve what the request model could not, once: the checkpoint on its robot (a name swept into the
    store is that sweep's policy, `records.resolve_in_store`), the row axes and their values, the held
    axes. `BadInput` naming the field; nothing is written."""
    ckpt = resolve_in_store(req.checkpoint, req.robot, store=req.store)
    rows_spec = parse_rows(req.rows)
    return Plan(req, ckpt, rows_spec, fixed_axes(req.set, rows_spec))


def run(req: SearchRequest) -> Result:
    """`policylab boundary search`: locate every row's crossing into the store; OUT/search.json."""
    p = plan(req)
    ckpt = p.ckpt
    claim_out_dir(req.out, p.config)
    t0 = time.perf_counter()
    summary, stats = run_search(
        ckpt,
        p.rows,
        p.fixed,
        push_range=(req.push_min, req.push_max),
        level=req.level,
        target_width=req.target_width,
        budget=req.budget,
        batch=req.batch,
        block=req.seed_block,
        store_root=req.store,
        threads=req.threads,
    )
    write_json(req.out / "search.json", summary)
    write_json(req.out / "timing.json", {"wall_s": round(time.perf_counter() - t0, 3), "rollouts_run": stats.ran})
    t = summary["totals"]
    return Result(
        req.out / "search.json",
        headlines=(
            f"{ckpt.name}: {t['rows']} rows, {t['located']} located, {t['below_range']} below and {t['above_range']} "
            f"above the push range, {t['budget_stopped']} stopped by the budget, {t['non_monotone']} flagged "
            f"non-monotone; {t['rollouts']} rollouts ({stats.ran} run, {t['grid_worlds']} grid worlds)",
            f"then: policylab boundary report --out {req.out}",
        ),
    )
