"""`policylab demo`: the main job on its embedded defaults, as `make demo` runs it.

The main job is the Breakout training loop: 216 grid candidates x 6 seeds in the shadow
simulator, the top 8 screened on real ALE (5 episodes each), the pick validated against
breakout_policy_v3 on 20 fresh ALE seeds, paired by seed, with a verdict.
"""

from __future__ import annotations

from pathlib import Path

import typer

DEMO_SCREEN_TOP = 8
DEMO_SCREEN_EPISODES = 5


def demo(
    out: Path = typer.Option(Path("runs/demo"), help="Output folder for the demo's reports."),
    executor: str = typer.Option("processes", help="local, processes or ray (results are identical)."),
) -> None:
    """Run the Breakout training loop on its defaults and print where its report is."""
    from policylab.studies.breakout.train import TrainRequest, run_train

    report = run_train(TrainRequest(out=out, screen_top=DEMO_SCREEN_TOP, screen_episodes=DEMO_SCREEN_EPISODES,
                                    executor=executor))
    typer.echo(f"report: {report}")
