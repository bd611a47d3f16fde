"""Every generated command of the `policylab` CLI, found by walking the app (CLI tests enumerate it)."""

from __future__ import annotations

from policylab.cli import build_app


def _commands(app=None, prefix: str = "") -> dict[str, type]:
    """{"group name": request model} for every command under `app`."""
    app = app or build_app()
    found = {}
    for info in app.registered_commands:
        model = getattr(info.callback, "request_model", None)
        name = (prefix + " " + (info.name or info.callback.__name__)).strip()
        found[name] = model
    for group in app.registered_groups:
        found.update(_commands(group.typer_instance, (prefix + " " + group.name).strip()))
    return found


def _indexes(app=None, prefix: str = "") -> dict[str, object]:
    """{"group name": what the runs index shows of its out folder (`command(..., index=...)`)}."""
    app = app or build_app()
    found = {
        (prefix + " " + (i.name or i.callback.__name__)).strip(): getattr(i.callback, "run_index", None)
        for i in app.registered_commands
    }
    for group in app.registered_groups:
        found.update(_indexes(group.typer_instance, (prefix + " " + group.name).strip()))
    return found


COMMANDS = _commands()
INDEX = _indexes()
