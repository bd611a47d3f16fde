"""`policylab lava-leap run`: every experiment of the Lava Leap post, end to end."""

from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(
    help="Lava Leap: REINFORCE vs PPO vs GRPO on a 40-tile floor, every score an exact expectation "
    "(dynamic programming over 200 fixed test floors), with charts and a walkthrough of one GRPO update.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def _group() -> None:
    """Lava Leap study commands."""


@app.command()
def run(
    out: Path = typer.Option(..., help="Output folder: results/summary.json, results/walkthrough.json, "
                             "results/checks.json, assets/e1..e5-*.png and index.html. Must be new, empty, or "
                             "hold a run of this same configuration."),
    lr: float = typer.Option(0.5, help="Policy learning rate (> 0)."),
    eps: float = typer.Option(0.2, help="Clip width: a step stops pushing once its ratio leaves "
                              "[1-eps, 1+eps] in its advantage's direction; in (0, 1)."),
    group_size: int = typer.Option(8, "--group-size", "-G", help="G: plays of each training floor per update "
                                   "(>= 2; GRPO's advantage of a single play is zero)."),
    passes: int = typer.Option(4, help="Passes over each group for GRPO and PPO (>= 1)."),
    rounds: int = typer.Option(300, help="Training updates per run (>= 140: the slow-seed analysis reads "
                               "the curve up to update 140)."),
    eval_every: int = typer.Option(10, help="Exact evaluation every this many updates; must divide 10 and rounds."),
    lr_critic: float = typer.Option(0.5, help="PPO critic learning rate (> 0)."),
    seeds: int = typer.Option(5, help="Training seeds per algorithm (1..100)."),
    seed_base: int = typer.Option(0, help="Training seed i is seed_base + i (>= 0)."),
) -> None:
    """Run baseline and ceiling, E1-E6, the LR sweep, clip statistics, the slow-seed analysis and the
    test-floor statistics; write the JSON, the six charts and index.html into OUT."""
    import time

    from policylab.config import claim_out_dir, validated
    from policylab.progress import say
    from policylab.studies.lava_leap.config import LavaLeapConfig
    from policylab.studies.lava_leap.report import write_outputs

    cfg = validated(LavaLeapConfig, dict(lr=lr, eps=eps, G=group_size, passes=passes, rounds=rounds,
                                         eval_every=eval_every, lr_critic=lr_critic, n_seeds=seeds,
                                         seed_base=seed_base))
    claim_out_dir(out, dict(study="lava_leap", **cfg.model_dump()))
    start = time.perf_counter()
    index = write_outputs(cfg, out)
    say(f"lava-leap: done in {time.perf_counter() - start:.1f} s")
    typer.echo(f"report: {index}")
