"""One line on stderr while a Breakout kernel compiles on its first use.

Why: numba compiles the vector env's and the single env's kernels on their first call after an install or a
change of their source (then loads them from its cache), and a cold compile takes about a minute in which
`make_vec` + `reset` + `step` would otherwise sit silent. The line is printed only if the first call is still
running after `NOTICE_AFTER_S` (a cached load takes a fraction of that), once per kernel and process.
"""

from __future__ import annotations

import sys
import threading

NOTICE_AFTER_S = 1.0


def first_call(kernel, what: str, *args, after_s: float = NOTICE_AFTER_S):
    """`kernel(*args)`, saying on stderr that `what` is being compiled if the call has no compiled version
    loaded in this process yet and takes longer than `after_s`."""
    if kernel.signatures:
        return kernel(*args)
    timer = threading.Timer(after_s, print, (f"policylab: compiling {what} with numba (once after an install or "
                                             "an upgrade, then cached; about a minute) ...",),
                            {"file": sys.stderr, "flush": True})
    timer.daemon = True
    timer.start()
    try:
        return kernel(*args)
    finally:
        timer.cancel()
