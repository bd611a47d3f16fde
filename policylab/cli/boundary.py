"""`policylab boundary ...`: the Failure-boundary study's commands (options from their request models in
policylab/studies/boundary/requests.py; each stage module's `run` does the work)."""

from __future__ import annotations

import typer

from policylab.cli.command import command
from policylab.report.run_kinds import ANY, RunKind
from policylab.studies.boundary import requests

app = typer.Typer(
    help="Failure boundary of a legged MuJoCo policy (the Unitree Go1 by default; --robot with a shipped robot, "
    f"{requests.SHIPPED_ROBOTS}, or a robot spec file): "
    "train, sweep a friction x push grid into the store, verify it by re-simulation (the gate diff and report "
    "require), then reduce, select, replay, render clips and .rrd files, diff two checkpoints and write the reports.",
    no_args_is_help=True,
    rich_markup_mode=None,  # plain help: long option names wrap instead of being cut at 80 columns
)

S = "policylab.studies.boundary"
ANALYSIS = "boundary reduce"  # the stages after reduce write inside its analysis folder
command(
    app,
    "robot",
    requests.RobotRequest,
    f"{S}.robot_card:run",
    index=RunKind(
        "boundary",
        "boundary robot",
        "robot.json",
        (),
        ("robot", "zero_policy_worlds"),
        (
            ("actuators", "action_size"),
            ("observation size", "observation.size"),
            ("zero policy survived", "zero_policy.survived"),
            ("of nominal worlds", "zero_policy.worlds"),
        ),
        lambda folder, data: "; ".join(data["warnings"]) or "spec checked, no warnings",
        signature=("zero_policy_worlds", ANY),
    ),
)
command(app, "train", requests.TrainRequest, f"{S}.train:run", index=None)  # a checkpoint folder, not a run
command(
    app,
    "learn",
    requests.LearnRequest,
    f"{S}.learn.run:run",
    index=RunKind(
        "boundary",
        "boundary learn",
        "learn.json",
        ("report.html",),
        ("recipe", "steps", "seed"),
        (
            ("agent steps", "agent_steps"),
            ("nominal survived", "nominal.survived"),
            ("of worlds", "nominal.worlds"),
            ("speed (m/s)", "nominal.speed_mps"),
        ),
    ),
)
command(
    app,
    "calibrate",
    requests.CalibrateRequest,
    f"{S}.threshold_data:run",
    index=RunKind(
        "boundary",
        "boundary calibrate",
        "calibration.json",
        (),
        ("checkpoint.name", "n_nominal", "n_pushed"),
        (("nominal survived", "nominal.status.survived"), ("nominal failed", "nominal.status.failed")),
        signature=("n_nominal", ANY),
    ),
)
command(
    app,
    "sweep",
    requests.SweepRequest,
    f"{S}.sweep:run",
    index=RunKind(
        "boundary",
        "boundary sweep",
        "sweep.json",
        (),
        ("checkpoint.name", "grid.total_rollouts", "grid.seeds_per_cell"),
        (
            ("survived", "counts.survived"),
            ("failed", "counts.failed"),
            ("diverged", "counts.diverged"),
            ("missing", "counts.missing"),
        ),
        signature=("grid", ANY),
    ),
)
command(
    app,
    "search",
    requests.SearchRequest,
    f"{S}.search:run",
    index=RunKind(
        "boundary",
        "boundary search",
        "search.json",
        ("report/report.html",),
        ("checkpoint.name", "budget", "seed_block"),
        (
            ("rows", "totals.rows"),
            ("located", "totals.located"),
            ("below range", "totals.below_range"),
            ("above range", "totals.above_range"),
            ("rollouts", "totals.rollouts"),
        ),
        signature=("search", ANY),
    ),
)
command(
    app,
    "verify",
    requests.VerifyRequest,
    f"{S}.verify:run",
    index=RunKind(
        "boundary",
        "boundary verify",
        "equivalence.json",
        (),
        ("checkpoint.name", "sample"),
        (("identical", "agreement.identical"), ("re-simulated", "agreement.n")),
        lambda folder, data: "PASS" if data["passed"] else "FAIL",
        signature=("sample", ANY),
    ),
)
command(
    app,
    "reduce",
    requests.ReduceRequest,
    f"{S}.reduce:run",
    index=RunKind(
        "boundary",
        ANALYSIS,
        "reduce.json",
        ("report/report.html",),
        ("checkpoint", "resamples", "seed"),
        (
            ("failed", "totals.failed"),
            ("survived to the end (censored)", "totals.censored"),
            ("diverged", "totals.diverged"),
            ("rule agrees", "rule_check.agree"),
            ("rule checked", "rule_check.checked"),
        ),
        signature=("rule_check", ANY),
    ),
)
command(app, "select", requests.SelectRequest, f"{S}.select:run", index=ANALYSIS)
command(app, "replay", requests.ReplayRequest, f"{S}.replay:run", index=ANALYSIS)
command(app, "clips", requests.ClipsRequest, f"{S}.clips:run", index=ANALYSIS)
command(app, "rrd", requests.RrdRequest, f"{S}.rrd:run", index=ANALYSIS)
command(
    app,
    "diff",
    requests.DiffRequest,
    f"{S}.diff:run",
    index=RunKind(
        "boundary",
        "boundary diff",
        "diff.json",
        ("report/report.html",),
        ("a", "b", "q"),
        (("cells safer", "summary.safer"), ("cells worse", "summary.worse"), ("unchanged", "summary.unchanged")),
        signature=("store_b", ANY),
    ),
)
command(app, "report", requests.ReportRequest, f"{S}.report:run", index=(ANALYSIS, "boundary diff", "boundary search"))
command(
    app, "probe", requests.ProbeRequest, f"{S}.probe:run", index=None
)  # a live page; its out folder holds no report
