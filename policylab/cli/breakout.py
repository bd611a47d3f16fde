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

command(app, "eval", r.EvalRequest, "policylab.studies.breakout.episodes.eval:run")
command(app, "audit", r.AuditRequest, "policylab.studies.breakout.audit.audit:run")
command(app, "train", r.TrainRequest, "policylab.studies.breakout.search.train:run")
command(app, "transfer", r.TransferRequest, "policylab.studies.breakout.learn.transfer:run")
command(app, "learn", r.LearnRequest, "policylab.studies.breakout.learn.learn:run")
command(app, "trace", r.TraceRequest, "policylab.studies.breakout.fidelity.trace:run")
command(app, "lockstep", r.LockstepRequest, "policylab.studies.breakout.fidelity.lockstep:run")
command(app, "calibrate", r.CalibrateRequest, "policylab.studies.breakout.fidelity.calibration.calibrate:run")
