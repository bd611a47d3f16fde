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


def test_a_kernel_loaded_from_numbas_cache_says_nothing(tmp_path, monkeypatch, capsys):
    """A cached kernel's first call in a process loads it (seconds at most, more on a loaded machine): no line
    saying it compiles; once its source changes, the cache no longer matches and the line is back."""
    import importlib
    import sys

    source = "import numba\n\n@numba.njit(cache=True)\ndef triple(x):\n    return {k} * x\n"
    (tmp_path / "notice_kernel.py").write_text(source.format(k=3))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("notice_kernel")
    assert first_call(module.triple, "a cached kernel", 2, after_s=0.0) == 6  # compiled, and written to the cache
    capsys.readouterr()
    module = importlib.reload(module)  # a fresh dispatcher: what a new process sees
    assert not module.triple.signatures
    assert first_call(module.triple, "a cached kernel", 2, after_s=0.0) == 6
    assert capsys.readouterr().err == ""
    (tmp_path / "notice_kernel.py").write_text(source.format(k=30))  # another size: a new stamp on any filesystem
    module = importlib.reload(module)
    assert first_call(module.triple, "a cached kernel", 2, after_s=0.0) == 60
    assert "compiling a cached kernel" in capsys.readouterr().err
    sys.modules.pop("notice_kernel")
