"""`policylab lava-leap ...`: the Lava Leap study's commands (options from their request models)."""

from __future__ import annotations

import typer

from policylab.cli.command import command
from policylab.report.run_kinds import RunKind, checks
from policylab.studies.lava_leap.requests import RunRequest

app = typer.Typer(
    help="Lava Leap: REINFORCE vs PPO vs GRPO on a 40-tile floor, every score an exact expectation "
    "(dynamic programming over 200 fixed test floors), with charts and a walkthrough of one GRPO update.",
    no_args_is_help=True,
    rich_markup_mode=None,  # plain help: long option names wrap instead of being cut at 80 columns
)


@app.callback()
def _group() -> None:
    """Lava Leap study commands."""


command(app, "run", RunRequest, "policylab.studies.lava_leap.report:run", index=RunKind(
    "lava_leap", "lava-leap run", "results/summary.json", ("index.html",), ("rounds", "n_seeds", "G", "lr", "eps"),
    (("best possible score", "ceiling.score"), ("GRPO final", "final.grpo.score_mean"),
     ("PPO final", "final.ppo.score_mean"), ("REINFORCE final", "final.reinforce.score_mean")),
    checks("results/checks.json"), signature=("study", "lava_leap")))
