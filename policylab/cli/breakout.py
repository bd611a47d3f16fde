"""`policylab breakout ...`: the Breakout sim-to-real study's commands (options from their request models
in `policylab.studies.breakout.requests`)."""

from __future__ import annotations

import typer

from policylab.cli.command import command
from policylab.studies.breakout import requests as r

app = typer.Typer(
    help="Breakout sim-to-real: the shadow simulator vs real Atari Breakout (ALE).",
    no_args_is_help=True,
    rich_markup_mode=None,  # plain help: long option names wrap instead of being cut at 80 columns
)

command(app, "eval", r.EvalRequest, "policylab.studies.breakout.eval:run_eval")
command(app, "audit", r.AuditRequest, "policylab.studies.breakout.audit:run_audit")
command(app, "train", r.TrainRequest, "policylab.studies.breakout.train:run_train")
command(app, "transfer", r.TransferRequest, "policylab.studies.breakout.transfer:run_transfer")
command(app, "learn", r.LearnRequest, "policylab.studies.breakout.learn:run_learn")
command(app, "trace", r.TraceRequest, "policylab.studies.breakout.trace:run_trace")
command(app, "lockstep", r.LockstepRequest, "policylab.studies.breakout.lockstep:run_lockstep")
command(app, "calibrate", r.CalibrateRequest, "policylab.studies.breakout.calibration.run:run_calibrate")
