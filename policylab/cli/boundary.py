"""`policylab boundary ...`: the Failure-boundary study's commands (options from their request models in
policylab/studies/boundary/requests.py; each stage module's `run` does the work)."""

from __future__ import annotations

import typer

from policylab.cli.command import command
from policylab.studies.boundary import requests as r

app = typer.Typer(
    help="Failure boundary of a legged MuJoCo policy (the Unitree Go1 by default; --robot ant or a robot spec file): "
    "train, sweep a friction x push grid into the store, verify it by re-simulation (the gate diff and report "
    "require), then reduce, select, replay, render clips and .rrd files, diff two checkpoints and write the reports.",
    no_args_is_help=True,
    rich_markup_mode=None,  # plain help: long option names wrap instead of being cut at 80 columns
)

S = "policylab.studies.boundary"
command(app, "robot", r.RobotRequest, f"{S}.robot_card:run")
command(app, "train", r.TrainRequest, f"{S}.train:run")
command(app, "calibrate", r.CalibrateRequest, f"{S}.threshold_data:run")
command(app, "sweep", r.SweepRequest, f"{S}.sweep:run")
command(app, "verify", r.VerifyRequest, f"{S}.verify:run")
command(app, "reduce", r.ReduceRequest, f"{S}.reduce:run")
command(app, "select", r.SelectRequest, f"{S}.select:run")
command(app, "replay", r.ReplayRequest, f"{S}.replay:run")
command(app, "clips", r.ClipsRequest, f"{S}.clips:run")
command(app, "rrd", r.RrdRequest, f"{S}.rrd:run")
command(app, "diff", r.DiffRequest, f"{S}.diff:run")
command(app, "report", r.ReportRequest, f"{S}.report:run")
