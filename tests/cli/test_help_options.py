"""Every `--option` a command's help text mentions is an option of that command (learn's help once sent
readers to an `--episodes` it does not have); jargon comes after its plain words."""

from __future__ import annotations

import re

import typer

from policylab.cli import build_app
from tests.support.words import unexplained


def _leaves(cmd, path: str = ""):
    """(path, command) of every command under `cmd` (a group holds `commands`; typer's click may be its own)."""
    if hasattr(cmd, "commands"):
        for name, sub in cmd.commands.items():
            yield from _leaves(sub, f"{path} {name}".strip())
    else:
        yield path, cmd


def _texts(cmd) -> list[str]:
    """A command's help and its options' help, in the order `--help` prints them."""
    return [cmd.help or ""] + [getattr(p, "help", None) or "" for p in cmd.params]


def test_every_option_a_help_text_names_exists():
    root = typer.main.get_command(build_app())
    bad, seen = [], 0
    for path, cmd in _leaves(root):
        opts = {o for p in cmd.params for o in (*p.opts, *getattr(p, "secondary_opts", ()))}
        for text in _texts(cmd):
            for opt in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text):
                seen += 1
                if opt not in opts:
                    bad.append(f"policylab {path}: {opt}")
    assert seen > 20  # the walk reached the help texts
    assert not bad, bad


def test_help_says_survived_survival_and_body_weight_before_the_short_forms():
    """select's help read "3/16 <= S <= 0.5", calibrate's "50-200 %BW": S and %BW unexplained. Breakout's
    "seed S" is a seed, not survival: S is checked in the boundary study's help only."""
    root = typer.main.get_command(build_app())
    bad = [
        f"policylab {path}: {b}"
        for path, cmd in _leaves(root)
        for b in unexplained(
            "\n".join(_texts(cmd)), ("censored", "%BW", "S") if path.startswith("boundary") else ("censored", "%BW")
        )
    ]
    assert not bad, bad
