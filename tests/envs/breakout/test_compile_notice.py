"""A kernel's first, slow call says on stderr what is being compiled; a compiled one says nothing."""

from __future__ import annotations

import numba

from policylab.envs.breakout.compile_notice import first_call


def test_a_slow_first_compile_says_so_once(capsys):
    @numba.njit  # not cached: this call compiles it
    def add_one(x):
        return x + 1

    assert first_call(add_one, "a test kernel", 1, after_s=0.0) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "compiling a test kernel with numba" in err
    assert first_call(add_one, "a test kernel", 2, after_s=0.0) == 3
    assert capsys.readouterr().err == ""
