"""The `policylab` command: one sub-command group per study, plus `demo` and `runs`.

Every failure ends as one line on stderr. Bad input (a field, a file, a folder) exits 2 with the
field named and leaves the out folder as it was; anything else is an internal error: exit 1, and
the traceback goes to a log file whose path the line gives (inside the run's out folder, or the
system temp folder when there is none to write to).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

import typer
# typer 0.29 ships its own copy of click; its exceptions are what the parser raises (typer is pinned).
from typer._click import exceptions as click

from policylab.errors import BadInput

# (group name, module holding `app`): imported when the CLI is built; they hold request models
# and option declarations only, never the studies' heavy imports.
GROUPS = [
    ("breakout", "policylab.cli.breakout"),
    ("lava-leap", "policylab.cli.lava_leap"),
    ("boundary", "policylab.cli.boundary"),
]


def build_app() -> typer.Typer:
    import importlib

    from policylab.cli import top

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
    return app


def _error(message: str) -> None:
    print(f"policylab: error: {' '.join(str(message).split())}", file=sys.stderr)


def _usage_field(exc: click.UsageError) -> str:
    param = getattr(exc, "param", None)
    return f"{param.name}: " if param is not None and param.name else ""


def _log_internal(exc: BaseException) -> Path:
    from policylab.config import claimed_dirs

    text = "".join(traceback.format_exception(exc))
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for folder in [*reversed(claimed_dirs()), Path(tempfile.gettempdir())]:
        path = folder / f"policylab-error-{stamp}-{os.getpid()}.log"
        try:
            path.write_text(f"policylab {' '.join(sys.argv[1:])}\n{text}")
            return path
        except OSError:
            continue
    return Path("(no writable folder for the log)")


def invoke(argv: list[str] | None = None) -> int:
    """Run the CLI on `argv` in this process and return its exit status (tests call this)."""
    from policylab.config import forget_claims, release_claims

    forget_claims()
    try:
        result = build_app()(args=argv, prog_name="policylab", standalone_mode=False)
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
    except (KeyboardInterrupt, typer.Abort):
        _error("interrupted; a rerun of the same command resumes where this one stopped")
        return 130
    except Exception as exc:  # noqa: BLE001 - the one place internal errors are turned into a line
        log = _log_internal(exc)
        _error(f"internal error: {type(exc).__name__}: {exc} (traceback in {log})")
        return 1


def main() -> None:
    sys.exit(invoke())


