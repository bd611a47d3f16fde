"""The `policylab` command: one sub-command group per study, `store`, plus `demo`, `runs` and `export`.

Every failure ends as one line on stderr: exit 2 for bad input, 1 for an internal error (traceback in a log
file), 130 or 143 for Ctrl-C or SIGTERM; docs/design.md, "Module notes"."""

from __future__ import annotations

import functools
import importlib
import os
import shlex
import sys
import tempfile
import time
import traceback
from pathlib import Path

import typer

# typer 0.29 ships its own copy of click; its exceptions are what the parser raises (typer is pinned).
from typer._click import exceptions as click

from policylab import interrupts
from policylab.cli import top
from policylab.config import claimed_dirs, forget_claims, release_claims
from policylab.errors import BadInput
from policylab.report.run_kinds import RunKind, registered

# (group name, module holding `app`): imported when the CLI is built; they hold request models
# and option declarations only, never the studies' heavy imports.
GROUPS = [
    ("breakout", "policylab.cli.breakout"),
    ("lava-leap", "policylab.cli.lava_leap"),
    ("boundary", "policylab.cli.boundary"),
    ("store", "policylab.cli.store"),
]


def build_app() -> typer.Typer:
    app = typer.Typer(
        name="policylab",
        help="Measure control policies honestly: search or train in a fast simulator, then check with "
        "paired seeds and confidence intervals whether the result holds on the reference environment.",
        no_args_is_help=True,
        rich_markup_mode=None,  # plain help: long option names wrap instead of being cut at 80 columns
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    for name, module in GROUPS:
        app.add_typer(importlib.import_module(module).app, name=name)
    top.register(app)
    importlib.import_module("policylab.cli.store").register(app)
    return app


def run_kinds() -> tuple[RunKind, ...]:
    """What the runs index knows: the run kinds the commands declare (building the CLI registers them)."""
    build_app()
    return registered()


@functools.cache
def _command() -> typer.core.TyperGroup:
    """The click command tree, built once per process: building it converts every option of every
    command (tens of milliseconds), which each in-process `invoke` (the tests make thousands) would
    repeat. Typer's own `app()` rebuilds it on every call, and adds only the pretty tracebacks this
    app turns off."""
    return typer.main.get_command(build_app())


def _error(message: str) -> None:
    print(f"policylab: error: {' '.join(str(message).split())}", file=sys.stderr)


def _usage_field(exc: click.UsageError) -> str:
    param = getattr(exc, "param", None)
    return f"{param.name}: " if param is not None and param.name else ""


def _log_internal(exc: BaseException) -> Path | None:
    """Write the traceback to a log in the newest out folder this run claimed, else the system temp
    folder; None when neither can hold it (a full disk). A write that fails leaves no file behind."""
    from policylab.fileio import atomic_write_bytes

    text = f"policylab {shlex.join(sys.argv[1:])}\n" + "".join(traceback.format_exception(exc))
    name = f"policylab-error-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    for folder in [*reversed(claimed_dirs()), Path(tempfile.gettempdir())]:
        try:
            atomic_write_bytes(folder / name, text.encode())
            return folder / name
        except OSError:
            continue
    return None


def invoke(argv: list[str] | None = None, *, leave: bool = False) -> int:
    """Run the CLI on `argv` in this process and return its exit status (tests call this). With
    `leave` (the command line) an interrupted command ends the process (`interrupts.leave`) while its
    signal handlers are still in place, so that a second signal after the line changes nothing."""
    # The signal handlers go in before typer runs: typer would turn a KeyboardInterrupt into a bare
    # exit status 130 before this function could say anything.
    with interrupts.handled():
        try:
            code = _invoke(argv)
            interrupts.check()  # a signal noted in the last stage's `deferred()` and not raised since
            return code
        except interrupts.Interrupted as exc:
            interrupts.say()
            if leave:
                interrupts.leave(exc.exit_code)
            return exc.exit_code


def _invoke(argv: list[str] | None) -> int:
    forget_claims()
    try:
        result = _command()(args=argv, prog_name="policylab", standalone_mode=False)
        return result if isinstance(result, int) else 0
    except click.NoArgsIsHelpError as exc:
        print(exc.format_message())
        return 0
    except typer.Exit as exc:
        return exc.exit_code
    except click.UsageError as exc:
        _error(f"{_usage_field(exc)}{exc.format_message()}")
        return 2
    except BadInput as exc:
        release_claims()
        _error(str(exc))
        return 2
    except Exception as exc:
        log = _log_internal(exc)
        where = f"traceback in {log}" if log else "no log: no folder could hold it"
        _error(f"internal error: {type(exc).__name__}: {exc} ({where})")
        return 1


def main() -> None:
    sys.exit(invoke(leave=True))
