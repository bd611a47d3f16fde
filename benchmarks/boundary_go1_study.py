"""The Go1 failure-boundary study end to end, on the command line, with its figures recorded.

For a checkpoint A and its retrain B (default go1_v0 -> go1_v1; go1_v2 -> go1_v3 for the PPO networks),
runs, into --runs:

    policylab boundary sweep --checkpoint A (default grid, 16 seeds)                -> store16
    policylab boundary verify / reduce / select / replay / clips / rrd / report     -> ana-A
    policylab boundary sweep --checkpoint A and B --seeds-per-cell 32               -> store32
    policylab boundary verify (both) / diff / report                                -> diff-A-B

Each checkpoint plays on its own robot with its own command (the committed record names them:
go1_v2/v3 run on go1_imu at the command they were trained for). The headline figures go to
benchmarks/results/<results>.json (the docs quote them from there): the sweep's totals and
equivalence gate, each friction row's boundary (bootstrap median and 95% interval), the goal checks
per row (issue 25's: boundary >= 75 %BW for mu >= 0.6 and >= 50 %BW for mu >= 0.3; a row whose robot
survives every push has its boundary above the grid and counts as holding; and issue 37's bar,
`goals.trainer_bar`), A's nominal judgement
(256 worlds, mu 1.0, no push, 5 s: from its training record, measured here when the record has
none), the clips, the diff. Long (about an hour of CPU for go1_v0/v1, more for networks that
survive the whole 5 s): run it with `nice`.

    .venv/bin/python benchmarks/boundary_go1_study.py                          # go1_v0 -> go1_v1
    .venv/bin/python benchmarks/boundary_go1_study.py --a go1_v2 --b go1_v3    # -> boundary_go1_ppo_study.json
    .venv/bin/python benchmarks/boundary_go1_study.py --a go1_v4 --map-only    # -> boundary_go1_v4_map.json
    .venv/bin/python benchmarks/boundary_go1_study.py --a go1_v4 --b go1_v5 --diff-only  # -> boundary_go1_v4_go1_v5_diff.json

--n-mu/--n-push/--seeds/--seeds-diff shrink the grids for a trial run (with --results naming a
scratch results file, since the figures are then not the study's).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import results_file

from policylab.cli import invoke
from policylab.studies.boundary.analysis_folder import read_stage
from policylab.studies.boundary.checkpoint import committed_record, resolve_checkpoint
from policylab.studies.boundary.goals import boundary_summary, nominal_check, trainer_bar

# the study's known pairs: where each writes its runs and its figures
STUDIES = {
    ("go1_v0", "go1_v1"): ("runs/boundary-go1", "boundary_go1_study"),
    ("go1_v2", "go1_v3"): ("runs/boundary-go1-ppo", "boundary_go1_ppo_study"),
}
NOMINAL_WORLDS = 256


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
    ap.add_argument("--a", default="go1_v0", help="the checkpoint mapped on the default grid and diffed from")
    ap.add_argument("--b", default="go1_v1", help="its retrain, diffed against A")
    ap.add_argument("--runs", type=Path, help="the runs folder (default: per pair, runs/boundary-go1[-ppo])")
    ap.add_argument(
        "--results", help="results file name (default: per pair, boundary_go1_study / boundary_go1_ppo_study)"
    )
    ap.add_argument("--n-mu", type=int, default=20, help="friction rows (default grid: 20)")
    ap.add_argument("--n-push", type=int, default=20, help="push columns (default grid: 20)")
    ap.add_argument("--seeds", type=int, default=16, help="seeds per cell of A's map")
    ap.add_argument("--seeds-diff", type=int, default=32, help="seeds per cell of the diff's sweeps")
    ap.add_argument("--record-only", action="store_true", help="only re-read the finished runs into the results file")
    ap.add_argument(
        "--map-only",
        action="store_true",
        help="A's map alone (sweep, verify, reduce), no retrain diff: into runs/boundary-A and boundary_A_map.json",
    )
    ap.add_argument(
        "--diff-only",
        action="store_true",
        help="the diff A -> B alone (both 32-seed sweeps, verify, "
        "diff, report), A's map being another run's (--map-only): into boundary_A_B_diff.json",
    )
    args = ap.parse_args()
    if args.map_only:
        args.b = None
    runs, results = STUDIES.get(
        (args.a, args.b),
        (f"runs/boundary-{args.a}-{args.b}", f"boundary_{args.a}_{args.b}_study")
        if args.b
        else (f"runs/boundary-{args.a}", f"boundary_{args.a}_map"),
    )
    if args.diff_only:
        results = f"boundary_{args.a}_{args.b}_diff"
    r, name = args.runs or Path(runs), args.results or results
    path = results_file.RESULTS / f"{name}.json"
    walls = {} if not args.record_only else json.loads(path.read_text()).get("walls_s", {})
    if not args.record_only:
        stages(args, r, walls)
    if args.diff_only:
        result = {
            "study": f"the retrain diff {args.a} -> {args.b} (default grid, {args.seeds_diff} seeds per cell)",
            "script": "benchmarks/boundary_go1_study.py",
            "a": args.a,
            "b": args.b,
            "diff": diff_figures(read_stage(r / f"diff-{args.a}-{args.b}", "diff")),
            "walls_s": {k: round(v, 1) for k, v in walls.items()},
        }
        print(json.dumps(result, indent=2))
        results_file.record(name, result, machine_note="the load average is at the end of the study")
        return
    record(args.a, args.b, r, name, walls)


def stages(args, r: Path, walls: dict) -> None:
    a, b = args.a, args.b
    grid = ("--n-mu", args.n_mu, "--n-push", args.n_push)
    if args.diff_only:
        return diff_stages(args, r, walls, grid)
    walls["sweep16"] = run(
        "sweep",
        "--checkpoint",
        a,
        *grid,
        "--seeds-per-cell",
        args.seeds,
        "--store",
        r / "store16",
        "--out",
        r / f"sweep16-{a}",
    )
    walls["verify16"] = run("verify", "--checkpoint", a, "--store", r / "store16", "--out", r / f"verify16-{a}")
    ana = r / f"ana-{a}"
    walls["reduce"] = run("reduce", "--store", r / "store16", "--checkpoint", a, "--out", ana)
    if b is None:
        return
    run("select", "--out", ana)
    walls["replay"] = run("replay", "--out", ana)
    walls["clips"] = run("clips", "--out", ana)
    walls["rrd"] = run("rrd", "--out", ana)
    walls["report"] = run("report", "--out", ana)
    diff_stages(args, r, walls, grid)


def diff_stages(args, r: Path, walls: dict, grid: tuple) -> None:
    a, b = args.a, args.b
    for ckpt in (a, b):
        walls[f"sweep32_{ckpt}"] = run(
            "sweep",
            "--checkpoint",
            ckpt,
            *grid,
            "--seeds-per-cell",
            args.seeds_diff,
            "--store",
            r / "store32",
            "--out",
            r / f"sweep32-{ckpt}",
        )
        walls[f"verify32_{ckpt}"] = run(
            "verify", "--checkpoint", ckpt, "--store", r / "store32", "--out", r / f"verify32-{ckpt}"
        )
    diff = r / f"diff-{a}-{b}"
    walls["diff"] = run("diff", "--store", r / "store32", "--a", a, "--b", b, "--out", diff)
    walls["diff_report"] = run("report", "--out", diff)


def nominal(name: str) -> dict | None:
    """The checkpoint's nominal judgement: its training record's (what `boundary learn` measured and
    shipped), else measured here on the same worlds when the record names the command it was trained
    for; None for a policy without a command (nothing to walk at)."""
    rec = committed_record(name)
    judged, source = rec.get("nominal"), "the committed training record"
    if judged is None and rec.get("command") is not None:
        from policylab.studies.boundary.learn.judge import nominal as judge

        ckpt = resolve_checkpoint(name)
        judged, source = judge(ckpt.path, ckpt.robot, NOMINAL_WORLDS, rec["command"][0]), "measured by this script"
    if judged is None:
        return None
    return {**nominal_check(judged), "source": source}


def record(a: str, b: str | None, r: Path, name: str, walls: dict) -> None:
    ana = r / f"ana-{a}"
    red = read_stage(ana, "reduce")  # in today's format whatever run wrote it (--record-only)
    eq16 = load(r / f"verify16-{a}" / "equivalence.json")
    rows = [row for row in red["boundary"] if row["status"] == "boundary"]
    widths = sorted(row["ci95"][1] - row["ci95"][0] for row in rows)
    result = {
        "study": f"the Go1 failure boundary ({a}, default grid, 16 seeds)"
        + (f" and the retrain diff ({a} -> {b}, 32 seeds per cell)" if b else ""),
        "script": "benchmarks/boundary_go1_study.py",
        "a": a,
        "b": b,
        "robot": resolve_checkpoint(a).robot.spec.name,
        "command": committed_record(a).get("command"),
        "sweep16": {
            "totals": red["totals"],
            "rule_check_agree": red["rule_check"]["agree"],
            "rule_check_checked": red["rule_check"]["checked"],
            "wall_s": round(walls["sweep16"], 1),
            "equivalence": eq16["agreement"],
            "gate_passed": eq16["passed"],
        },
        "boundary_rows": {
            "with_boundary": len(rows),
            "rows": len(red["boundary"]),
            "median_ci_width_pct_bw": widths[len(widths) // 2] if widths else None,
            "by_mu": {
                f"mu{round(row['row'] * 100):03d}": {
                    "status": row["status"],
                    "median": row["median"],
                    "ci95": row["ci95"],
                    "point": row["point"],
                    "beyond_grid": row.get("beyond_grid"),
                }
                for row in red["boundary"]
            },
        },
        "goals": boundary_summary(red["boundary"]),
        "trainer_bar": trainer_bar(red["boundary"]),
        "nominal": nominal(a),
        "walls_s": {k: round(v, 1) for k, v in walls.items()},
    }
    if b is not None:
        result.update(retrain(ana, r / f"diff-{a}-{b}"))
    print(json.dumps(result, indent=2))
    results_file.record(name, result, machine_note="the load average is at the end of the study")


def retrain(ana: Path, diff: Path) -> dict:
    """The clips of A's replay batch and the diff A -> B."""
    clips, clip_timing = load(ana / "clips" / "clips.json"), load(ana / "clips" / "timing.json")
    return {
        "clips": {
            "n": clip_timing["clips"],
            "wall_s": clip_timing["wall_s"],
            "s_per_clip": clip_timing["s_per_clip"],
            "consistent": sum(1 for c in clips if c["consistent"]),
            "entries": len(clips),
        },
        "diff": diff_figures(read_stage(diff, "diff")),
    }


def _friction_push(cell: dict) -> dict:
    """A diff's cell under the names of this study's friction x push grid (`mu`, `push_pct_bw`)."""
    return {{"row": "mu", "col": "push_pct_bw"}.get(k, k): v for k, v in cell.items()}


def diff_figures(d: dict) -> dict:
    """The diff's headline: cells safer and worse, the log-rank summary, both sweeps' totals, the cells each way
    and each friction row's boundary displacement."""
    return {
        "summary": d["summary"],
        "logrank": d["logrank_summary"],
        "a_totals": d["a"]["totals"],
        "b_totals": d["b"]["totals"],
        "worse_cells": [_friction_push(c) for c in d["shrinkage_census"]["cells"][:20]],
        "safer_cells": [_friction_push(c) for c in d["safer_cells"][:20]],
        "rows": [
            {
                "mu": row["row"],
                "a": row["a"],
                "b": row["b"],
                "displacement_pct_bw": row["displacement"],
                "q_logrank_row": row["q_logrank_row"],
            }
            for row in d["boundary_displacement"]
        ],
    }


if __name__ == "__main__":
    main()
