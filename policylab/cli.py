"""The `policylab` command: one sub-command group per study.

Bad input anywhere below is reported as one line naming the field, with exit status 2.
"""

from __future__ import annotations

import sys

import typer

from policylab.errors import BadInput

app = typer.Typer(
    name="policylab",
    help="Measure control policies honestly: search or train in a fast simulator, then check with "
    "paired seeds and confidence intervals whether the result holds on the reference environment.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register() -> None:
    """Attach each study's command group (imported lazily so `--help` stays fast)."""
    from policylab.studies import registry

    for name, group in registry.groups():
        app.add_typer(group, name=name)
    registry.add_top_level(app)


def main() -> None:
    _register()
    try:
        app()
    except BadInput as exc:
        print(f"policylab: error: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
