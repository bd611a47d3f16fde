"""`policylab lava-leap ...`: the Lava Leap study's commands (options from their request models)."""

from __future__ import annotations

from pathlib import Path

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


def _verdict(folder: Path, summary: dict) -> str:
    """The index's verdict: each pair's paired verdicts at equal and at chosen rates (the page's headline), then
    the checks."""
    from policylab.studies.lava_leap.uncertainty import side_by_side, verdict_line  # numpy: only for an index

    return "; ".join([*map(verdict_line, side_by_side(summary)), checks("results/checks.json")(folder, summary)])


command(
    app,
    "run",
    RunRequest,
    "policylab.studies.lava_leap.report:run",
    index=RunKind(
        "lava_leap",
        "lava-leap run",
        "results/summary.json",
        ("index.html",),
        ("rounds", "n_seeds", "G", "lr", "eps"),
        (
            ("best possible score", "ceiling.score"),
            ("GRPO final", "final.grpo.score_mean"),
            ("PPO final", "final.ppo.score_mean"),
            ("REINFORCE final", "final.reinforce.score_mean"),
        ),
        _verdict,
        signature=("study", "lava_leap"),
    ),
)
