"""`policylab demo`: the main job on its embedded defaults, as `make demo` runs it."""

from __future__ import annotations

from pathlib import Path

import typer


def demo(out: Path = typer.Option(Path("runs/demo"), help="Output folder for the demo's reports.")) -> None:
    """Run the main job on its defaults and print where its report is."""
    from policylab.studies.breakout.demo import run_demo

    report = run_demo(out)
    typer.echo(f"report: {report}")
