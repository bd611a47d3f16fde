"""Top-level commands: `policylab demo` (the main job on its embedded defaults) and `policylab runs`."""

from __future__ import annotations

from pathlib import Path

import typer
from pydantic import Field

from policylab.cli.command import command
from policylab.config import ExistingDir, OutDir, Request
from policylab.studies.breakout.requests import DemoRequest


class RunsRequest(Request):
    """Write one index.html for every run under a folder: study, command, config summary, headline
    numbers, verdict and a link to each run's report, newest first."""

    root: ExistingDir = Field(description="Folder to scan for runs (e.g. runs).", json_schema_extra={"argument": True})
    out: OutDir | None = Field(None, description="Where index.html and index.json go (default: ROOT).")


def runs(req: RunsRequest) -> Path:
    # numpy and jinja2: imported when the command runs, so that `--help` stays light
    from policylab.report.run_kinds import registered
    from policylab.report.runs_index import write_runs_index

    return write_runs_index(req.root, registered(), req.out)  # the kinds the CLI built with this app declared


def register(app: typer.Typer) -> None:
    command(app, "demo", DemoRequest, "policylab.studies.demo:run", index="breakout train")  # a train run
    command(app, "runs", RunsRequest, "policylab.cli.top:runs", index=None)  # writes the index, not a run
