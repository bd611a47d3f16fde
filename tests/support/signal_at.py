"""The `policylab` command line, run in this process with signals that it sends itself at chosen points:

    python -m tests.support.signal_at MODULE:ATTR,WHEN,SIGNAL [...] -- ARGS...

The first call of `MODULE.ATTR` (a dotted path: a function, or a method of a class) sends SIGNAL to
this process just before or after (WHEN) the call runs. Everything else is the real command: the real
Ray or process pool, the real store. Only the moment is chosen: a signal from outside cannot be made
to land inside Ray's start or stop (tests/rollout/test_interrupts.py).
"""

from __future__ import annotations

import functools
import importlib
import os
import signal
import sys
from collections.abc import Sequence

from tests.support.paths import ROOT


def argv(points: Sequence[str], args: Sequence[str]) -> list[str]:
    """The command line that runs `policylab ARGS` in a fresh interpreter with signals at `points`."""
    return [sys.executable, "-m", "tests.support.signal_at", *points, "--", *args]


def env(**extra: str) -> dict[str, str]:
    """That interpreter's environment: this checkout's code first on its path, and `extra`."""
    return {**os.environ, "PYTHONPATH": str(ROOT), **extra}


def arm(spec: str) -> None:
    where, when, name = spec.split(",")
    module, _, path = where.partition(":")
    *owners, attr = path.split(".")
    owner = importlib.import_module(module)
    for part in owners:
        owner = getattr(owner, part)
    original = getattr(owner, attr)
    sig = signal.Signals[name]
    fired = []

    @functools.wraps(original)
    def call(*args, **kwargs):
        first = not fired
        fired.append(True)
        if first and when == "before":
            os.kill(os.getpid(), sig)
        result = original(*args, **kwargs)
        if first and when == "after":
            os.kill(os.getpid(), sig)
        return result

    setattr(owner, attr, call)


def main() -> None:
    split = sys.argv.index("--")
    for spec in sys.argv[1:split]:
        arm(spec)
    sys.argv = ["policylab", *sys.argv[split + 1 :]]
    from policylab.cli import main as command

    command()


if __name__ == "__main__":
    main()
