"""Every `--option` a command's help text mentions is an option of that command (learn's help once sent
readers to an `--episodes` it does not have)."""

from __future__ import annotations

import re

import typer

from policylab.cli import build_app


def _leaves(cmd, path: str = ""):
    """(path, command) of every command under `cmd` (a group holds `commands`; typer's click may be its own)."""
    if hasattr(cmd, "commands"):
        for name, sub in cmd.commands.items():
            yield from _leaves(sub, f"{path} {name}".strip())
    else:
        yield path, cmd


def test_every_option_a_help_text_names_exists():
    root = typer.main.get_command(build_app())
    bad, seen = [], 0
    for path, cmd in _leaves(root):
        opts = {o for p in cmd.params for o in (*p.opts, *getattr(p, "secondary_opts", ()))}
        texts = [cmd.help or ""] + [getattr(p, "help", None) or "" for p in cmd.params]
        for text in texts:
            for opt in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text):
                seen += 1
                if opt not in opts:
                    bad.append(f"policylab {path}: {opt}")
    assert seen > 20  # the walk reached the help texts
    assert not bad, bad
