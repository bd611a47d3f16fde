"""What a stage hands back to the command line, and how a request is written back as a command.

Stages sit below `policylab.cli` and must not import it: they return a `Result` and build rerun lines here."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from policylab.config import Request


@dataclass(frozen=True)
class Result:
    """What a run hands back to the CLI: the report, headline lines, and the exit status (a failed
    equivalence gate is a result, not an error, and exits 1)."""

    report: Path
    headlines: tuple[str, ...] = field(default_factory=tuple)
    exit_code: int = 0


def flag_of(name: str) -> str:
    """The command-line flag of a request field: `search_seeds` -> `--search-seeds`."""
    return "--" + name.replace("_", "-")


# Fields a rerun line leaves out: results never depend on where the work ran.
PLACEMENT_FIELDS = ("executor", "ray_address")


def command_line(command: str, req: Request) -> str:
    """The command line that reproduces (and resumes) `req`: `command`, then every option that differs
    from its default, then `--out`; placement options are left out since results never depend on them."""
    parts = shlex.split(command)
    for name, info in type(req).model_fields.items():
        value = getattr(req, name)
        if name == "out" or name in PLACEMENT_FIELDS or value is None:
            continue
        if value == info.get_default(call_default_factory=True):
            continue
        if isinstance(value, bool):
            parts.append(flag_of(name) if value else flag_of("no_" + name))
        else:
            parts += [flag_of(name), str(value)]
    if getattr(req, "out", None) is not None:
        parts += ["--out", str(req.out)]
    return shlex.join(parts)
