"""Top-level commands: `policylab demo` (the main job on its embedded defaults) and `policylab runs`."""

from __future__ import annotations

from pathlib import Path

import typer
from pydantic import AfterValidator, Field
from typing import Annotated

from policylab.cli.command import command
from policylab.config import OutDir, Request


def _existing_dir(path: Path) -> Path:
    if not path.is_dir():
        raise ValueError(f"{path} is not a folder" if path.exists() else f"folder not found: {path}")
    return path


class RunsRequest(Request):
    """Write one index.html for every run under a folder: study, command, config summary, headline
    numbers, verdict and a link to each run's report, newest first."""

    root: Annotated[Path, AfterValidator(_existing_dir)] = Field(
        description="Folder to scan for runs (e.g. runs).", json_schema_extra={"argument": True})
    out: OutDir | None = Field(None, description="Where index.html and index.json go (default: ROOT).")


def runs(req: RunsRequest) -> Path:
    from policylab.report.runs_index import write_runs_index

    return write_runs_index(req.root, req.out)


def register(app: typer.Typer) -> None:
    from policylab.studies.breakout.requests import DemoRequest

    command(app, "demo", DemoRequest, "policylab.studies.demo:run_demo")
    command(app, "runs", RunsRequest, "policylab.cli.top:runs")
