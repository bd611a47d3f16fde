"""The Go1 failure-boundary study end to end, on the command line, with its figures recorded.

Runs, into --runs (default runs/boundary-go1):

    policylab boundary sweep --robot go1 --checkpoint go1_v0 (default grid, 16 seeds)   -> store16
    policylab boundary verify / reduce / select / replay / clips / rrd / report       -> ana-go1_v0
    policylab boundary sweep --checkpoint go1_v0 and go1_v1 --seeds-per-cell 32       -> store32
    policylab boundary verify (both) / diff / report                                  -> diff-go1_v0-go1_v1

and writes the headline figures to benchmarks/results/boundary_go1_study.json (the docs quote them
from there). Long (tens of minutes on 2 cores): run it with `nice -n 19`.

    .venv/bin/python benchmarks/boundary_go1_study.py [--runs runs/boundary-go1]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import results_file
from policylab.cli import invoke

RESULTS = results_file.RESULTS / "boundary_go1_study.json"


def run(*args) -> float:
    t0 = time.perf_counter()
    code = invoke(["boundary", *map(str, args)])
    if code:
        raise SystemExit(f"policylab boundary {' '.join(map(str, args))} exited {code}")
    return time.perf_counter() - t0


def load(path: Path):
    return json.loads(path.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, default=Path("runs/boundary-go1"))
    ap.add_argument("--record-only", action="store_true", help="only re-read the finished runs into the results file")
    args = ap.parse_args()
    r = args.runs
    walls = {} if not args.record_only else json.loads(RESULTS.read_text()).get("walls_s", {})
    if not args.record_only:
        stages(r, walls)
    record(r, walls)


def stages(r: Path, walls: dict) -> None:
    walls["sweep16"] = run("sweep", "--robot", "go1", "--checkpoint", "go1_v0", "--store", r / "store16", "--out",
                           r / "sweep16-go1_v0")
    run("verify", "--robot", "go1", "--checkpoint", "go1_v0", "--store", r / "store16", "--out", r / "verify16-go1_v0")
    ana = r / "ana-go1_v0"
    run("reduce", "--store", r / "store16", "--checkpoint", "go1_v0", "--out", ana)
    run("select", "--out", ana)
    run("replay", "--out", ana)
    walls["clips"] = run("clips", "--out", ana)
    run("rrd", "--out", ana)
    run("report", "--out", ana)
    for name in ("go1_v0", "go1_v1"):
        walls[f"sweep32_{name}"] = run("sweep", "--robot", "go1", "--checkpoint", name, "--seeds-per-cell", 32,
                                       "--store", r / "store32", "--out", r / f"sweep32-{name}")
        run("verify", "--robot", "go1", "--checkpoint", name, "--store", r / "store32", "--out", r / f"verify32-{name}")
    diff = r / "diff-go1_v0-go1_v1"
    run("diff", "--store", r / "store32", "--a", "go1_v0", "--b", "go1_v1", "--out", diff)
    run("report", "--out", diff)


def record(r: Path, walls: dict) -> None:
    ana, diff = r / "ana-go1_v0", r / "diff-go1_v0-go1_v1"
    red, d = load(ana / "reduce.json"), load(diff / "diff.json")
    clips, clip_timing = load(ana / "clips" / "clips.json"), load(ana / "clips" / "timing.json")
    eq16 = load(r / "verify16-go1_v0" / "equivalence.json")
    rows = [b for b in red["boundary"] if b["status"] == "boundary"]
    widths = sorted(b["ci95_pct_bw"][1] - b["ci95_pct_bw"][0] for b in rows)
    result = {
        "study": "the Go1 failure boundary (go1_v0, default grid, 16 seeds) and the retrain diff (go1_v0 -> go1_v1, "
                 "32 seeds per cell)",
        "script": "benchmarks/boundary_go1_study.py",
        "sweep16": {"totals": red["totals"], "rule_check_agree": red["rule_check"]["agree"],
                    "rule_check_checked": red["rule_check"]["checked"], "wall_s": round(walls["sweep16"], 1),
                    "equivalence": eq16["agreement"], "gate_passed": eq16["passed"]},
        "boundary_rows": {"with_boundary": len(rows), "rows": len(red["boundary"]),
                          "median_ci_width_pct_bw": widths[len(widths) // 2] if widths else None,
                          "by_mu": {f"mu{round(b['mu'] * 100):03d}": {"status": b["status"], "median": b["median_pct_bw"],
                                                       "ci95": b["ci95_pct_bw"], "point": b["point_pct_bw"]}
                                    for b in red["boundary"]}},
        "clips": {"n": clip_timing["clips"], "wall_s": clip_timing["wall_s"], "s_per_clip": clip_timing["s_per_clip"],
                  "consistent": sum(1 for c in clips if c["consistent"]), "entries": len(clips)},
        "diff": {"summary": d["summary"], "logrank": d["logrank_summary"], "a_totals": d["a"]["totals"],
                 "b_totals": d["b"]["totals"], "worse_cells": d["shrinkage_census"]["cells"][:20],
                 "safer_cells": d["safer_cells"][:20],
                 "rows": [{k: row[k] for k in ("mu", "a", "b", "displacement_pct_bw", "q_logrank_row")}
                          for row in d["boundary_displacement"]]},
        "walls_s": {k: round(v, 1) for k, v in walls.items()},
    }
    print(json.dumps(result, indent=2))
    results_file.record(RESULTS.stem, result, machine_note="the load average is at the end of the study")


if __name__ == "__main__":
    main()
