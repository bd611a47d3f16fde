"""One line on stderr while a Breakout kernel compiles on its first use (a cold compile takes up to a few minutes:
the vector env's step kernel took 211-217 s on the 2-core CI machine).

Printed once per kernel and process, only when numba's cache holds no version for the current source and the
first call outlasts `NOTICE_AFTER_S` (a cached load can take seconds on a loaded machine and says nothing)."""

from __future__ import annotations

import sys
import threading

NOTICE_AFTER_S = 1.0


def first_call(kernel, what: str, *args, after_s: float = NOTICE_AFTER_S):
    """`kernel(*args)`, saying on stderr that `what` is being compiled if the call has no compiled version
    loaded in this process yet and takes longer than `after_s`. A compiled kernel is called at once: `overloads`
    is numba's dict of them (its `signatures` list hashes every argument type again, some 15 us a call on the
    vector env's step, a fifth of a step of 8 envs)."""
    if kernel.overloads or _cached(kernel):
        return kernel(*args)
    timer = threading.Timer(
        after_s,
        print,
        (
            f"policylab: compiling {what} with numba (once after an install or "
            "an upgrade, then cached; up to a few minutes) ...",
        ),
        {"file": sys.stderr, "flush": True},
    )
    timer.daemon = True
    timer.start()
    try:
        return kernel(*args)
    finally:
        timer.cancel()


def _cached(kernel) -> bool:
    """Whether numba's cache index for `kernel` matches its current source (numba 0.68's `FunctionCache`; a
    kernel without a file cache, or another numba, reads as not cached, so the notice errs towards speaking)."""
    cache_file = getattr(getattr(kernel, "_cache", None), "_cache_file", None)
    return cache_file is not None and bool(cache_file._load_index())
