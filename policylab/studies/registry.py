"""Which study command groups the CLI shows. Each study package exposes `cli.app` (a typer.Typer)."""

from __future__ import annotations

import importlib

import typer

# (command name, module holding `app`)
STUDIES = [
    ("breakout", "policylab.studies.breakout.cli"),
    ("lava-leap", "policylab.studies.lava_leap.cli"),
    ("boundary", "policylab.studies.boundary.cli"),
]


def groups() -> list[tuple[str, typer.Typer]]:
    out = []
    for name, module in STUDIES:
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name == module:
                continue  # study not built yet
            raise
        out.append((name, mod.app))
    return out


def add_top_level(app: typer.Typer) -> None:
    """`policylab demo`: the main job on its embedded defaults (see policylab.studies.demo)."""
    from policylab.studies import demo

    app.command("demo")(demo.demo)
