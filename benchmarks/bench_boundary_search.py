"""Benchmark: `policylab boundary search` against a dense reference, on the Go1 and go1_v0.

1. Dense reference (run once, kept in benchmarks/boundary_search_reference.json and reused): four
   friction rows (mu 0.40, 0.55, 0.70, 1.00), pushes every 2.5 %BW from 10 to 60, 64 seeds each
   (seeds from the ``boundary/reference`` range), and each row's crossing of S = 0.5 from all of
   them (`crossing.fit`, the search's own estimator, and the linear interpolation reduce uses).
2. Full searches of the default 20 friction rows (push 0-200 %BW, budget 1,280 = 20% of the default
   grid), each in a fresh store, seed blocks 0..N: rollouts spent, every row's interval width, and,
   on the fresh blocks 1..N (block 0 shares the grid's seeds), how often the four reference rows'
   95% intervals cover the reference crossing.
3. A 4-axis search (friction x payload x motor strength x push), timed (goal <= 10 minutes), with
   the machine's load average beside it.
4. Planted curves (no simulation): the coverage of the design's intervals on known logistic crossings.

    .venv/bin/python benchmarks/bench_boundary_search.py [--repeats 12] [--work runs/bench-search]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
from results_file import record

from policylab.rollout.ensure import Planned, ensure
from policylab.rollout.seeds import seed_range_base
from policylab.rollout.store import Store
from policylab.studies.boundary import crossing
from policylab.studies.boundary.axes import parse_rows
from policylab.studies.boundary.checkpoint import policy_record, resolve_checkpoint
from policylab.studies.boundary.protocol import protocol
from policylab.studies.boundary.records import STUDY, search_world_record
from policylab.studies.boundary.reduce import first_crossing
from policylab.studies.boundary.search import run_search
from policylab.studies.boundary.simulation import SweepRunner
from policylab.studies.boundary.world import GridWorld, World

REFERENCE = Path(__file__).resolve().parent / "boundary_search_reference.json"
REF_MUS = (0.40, 0.55, 0.70, 1.00)
REF_PUSHES = tuple(10.0 + 2.5 * i for i in range(21))
REF_SEEDS = 64
PUSH_RANGE = (0.0, 200.0)  # the search's default


def reference(ckpt, work: Path) -> dict:
    if REFERENCE.is_file():
        return json.loads(REFERENCE.read_text())
    base = seed_range_base("boundary", "reference")
    policy, proto, env = policy_record(ckpt), protocol(ckpt.robot), ckpt.robot.spec.env
    planned = []
    for i, mu in enumerate(REF_MUS):
        for j, push in enumerate(REF_PUSHES):
            for s in range(REF_SEEDS):
                w = World(mu, push, 90.0, 2.0, base + (i * len(REF_PUSHES) + j) * REF_SEEDS + s)
                planned.append(
                    Planned(
                        STUDY, search_world_record(w, ckpt, env), policy, proto, detail=GridWorld(w, -1, -1, -1, -1)
                    )
                )
    t0 = time.perf_counter()
    with Store(work / "reference-store") as store:
        recs = ensure(store, planned, SweepRunner(ckpt, 400, 2), label="reference", unit="chunk")
    wall = time.perf_counter() - t0
    rows = []
    for mu in REF_MUS:
        ps = [p for p in planned if p.world["mu"] == mu]
        x = [p.world["push_pct"] for p in ps]
        y = [int(recs[p.key].outcome["status"] == "survived") for p in ps]
        s = [float(np.mean([yy for xx, yy in zip(x, y) if xx == push])) for push in REF_PUSHES]
        f = crossing.fit(x, y, *PUSH_RANGE, 0.5, 0.5)
        rows.append(
            {
                "mu": mu,
                "survival": s,
                "crossing_pct_bw": round(f.point, 3),
                "crossing_ci95_pct_bw": [round(f.lo, 3), round(f.hi, 3)],
                "linear_crossing_pct_bw": round(float(first_crossing(REF_PUSHES, np.array([s]))[0]), 3),
            }
        )
    ref = {
        "pushes_pct_bw": list(REF_PUSHES),
        "seeds_per_push": REF_SEEDS,
        "rollouts": len(planned),
        "seed_range": "boundary/reference",
        "wall_s": round(wall, 1),
        "rows": rows,
    }
    REFERENCE.write_text(json.dumps(ref, indent=2) + "\n")
    return ref


def search(ckpt, work: Path, name: str, rows: list[str], block: int, budget: int, **kw) -> tuple[dict, float]:
    store = work / name
    if store.exists():
        shutil.rmtree(store)
    t0 = time.perf_counter()
    summary, _ = run_search(
        ckpt,
        parse_rows(rows),
        {},
        push_range=PUSH_RANGE,
        level=0.5,
        target_width=10.0,
        budget=budget,
        batch=4,
        block=block,
        store_root=store,
        **kw,
    )
    return summary, time.perf_counter() - t0


def planted(n: int = 400) -> dict:
    rng = np.random.default_rng(0)
    covered = 0
    for i in range(n):
        c, s = rng.uniform(20, 150), (0.5, 1.5, 3.0, 6.0)[i % 4]
        d = crossing.planted_search(lambda x: 1 / (1 + np.exp((x - c) / s)), *PUSH_RANGE, rng)  # noqa: B023 (called here)
        covered += d.fit.lo <= c <= d.fit.hi
    return {"rows": n, "covered": covered, "coverage": covered / n}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=12)
    ap.add_argument("--work", type=Path, default=Path("runs/bench-search"))
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    ckpt = resolve_checkpoint("go1_v0")
    ref = reference(ckpt, args.work)
    ref_by_mu = {r["mu"]: r for r in ref["rows"]}
    cov, widths, full = [], [], []
    for block in range(args.repeats + 1):
        s, wall = search(ckpt, args.work, "full", ["friction=0.05:1.00:20"], block, 1280)
        for r in s["rows"]:
            ref_row = ref_by_mu.get(r["values"]["friction"])
            if ref_row is not None and block > 0:  # block 0 shares the grid's seeds; coverage on fresh blocks
                cov.append(bool(r["ci95_pct_bw"][0] <= ref_row["crossing_pct_bw"] <= r["ci95_pct_bw"][1]))
                widths.append(r["ci95_pct_bw"][1] - r["ci95_pct_bw"][0])
        # an interval open at an end (None) counts as wider than any
        w = [
            r["width_pct_bw"] if r["width_pct_bw"] is not None else float("inf")
            for r in s["rows"]
            if r["status"] == "crossing"
        ]
        full.append(
            {
                "seed_block": block,
                "rollouts": s["totals"]["rollouts"],
                "fraction_of_grid": round(s["totals"]["rollouts"] / 6400, 4),
                "totals": s["totals"],
                "max_width_pct_bw": max(w) if w and max(w) < float("inf") else None,
                "rows_located": len(w),
                "rows_wider_than_10": sum(x > 10 for x in w),
                "wall_s": round(wall, 1),
                "rows": [
                    {k: r[k] for k in ("values", "status", "stopped", "estimate_pct_bw", "ci95_pct_bw", "rollouts")}
                    for r in s["rows"]
                ],
            }
        )
    load0 = os.getloadavg()[0]
    s4, wall4 = search(
        ckpt, args.work, "four-axis", ["friction=0.4:1.0:4", "payload=0,3,6", "motor=0.8,1,1.2"], 0, 36 * 64
    )
    result = {
        "reference": ref,
        "coverage": {
            "searches": args.repeats,
            "intervals": len(cov),
            "covered": int(sum(cov)),
            "fraction": round(sum(cov) / len(cov), 4),
            "max_width_pct_bw": max(widths),
            "median_width_pct_bw": float(np.median(widths)),
        },
        "full": full,
        "full_max_fraction_of_grid": max(f["fraction_of_grid"] for f in full),
        "full_max_width_pct_bw": max((f["max_width_pct_bw"] or float("nan") for f in full), default=None),
        "full_rows_wider_than_10": sum(f["rows_wider_than_10"] for f in full),
        "full_rows": sum(f["totals"]["rows"] for f in full),
        "full_median_fraction_of_grid": float(np.median([f["fraction_of_grid"] for f in full])),
        "four_axis": {
            "rows": s4["totals"]["rows"],
            "rollouts": s4["totals"]["rollouts"],
            "totals": s4["totals"],
            "wall_s": round(wall4, 1),
            "load_average_before": round(load0, 2),
            "load_average_after": round(os.getloadavg()[0], 2),
            "rows_detail": [
                {k: r[k] for k in ("values", "status", "estimate_pct_bw", "ci95_pct_bw")} for r in s4["rows"]
            ],
        },
        "planted": planted(),
    }
    print(json.dumps({k: v for k, v in result.items() if k not in ("full", "reference")}, indent=1)[:3000])
    record("boundary_search", result, machine_note="2 cores shared with other engineers' jobs")


if __name__ == "__main__":
    main()
