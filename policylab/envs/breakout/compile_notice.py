"""One line on stderr while a Breakout kernel compiles on its first use.

Why: numba compiles the vector env's and the single env's kernels on their first call after an install or a
change of their source (then loads them from its cache), and a cold compile takes about a minute in which
`make_vec` + `reset` + `step` would otherwise sit silent. The line is printed only when numba's cache holds no
compiled version for the kernel's current source and the first call is still running after `NOTICE_AFTER_S`,
once per kernel and process (a cached load says nothing: on a loaded machine it can take seconds, and a line
saying "compiling" then would be wrong).
"""

from __future__ import annotations

import sys
import threading

NOTICE_AFTER_S = 1.0


def first_call(kernel, what: str, *args, after_s: float = NOTICE_AFTER_S):
    """`kernel(*args)`, saying on stderr that `what` is being compiled if the call has no compiled version
    loaded in this process yet and takes longer than `after_s`."""
    if kernel.signatures or _cached(kernel):
        return kernel(*args)
    timer = threading.Timer(
        after_s,
        print,
        (
            f"policylab: compiling {what} with numba (once after an install or "
            "an upgrade, then cached; about a minute) ...",
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
