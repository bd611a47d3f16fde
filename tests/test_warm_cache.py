"""`policylab.warm_cache` leaves every cached numba kernel of the package compiled for its current source."""

import importlib
import pkgutil

from numba.core.registry import CPUDispatcher

import policylab
from policylab import warm_cache
from policylab.envs.breakout.compile_notice import _cached

# Kernels the install does not compile, with why: only their own tools call them, with the arrays of a trace.
NOT_WARMED = {
    "policylab.envs.breakout.rom.kernel.brick_flags": "calibration reads it on stored traces' RAM",
    "policylab.envs.breakout.ale_random._repeats": "`sticky_repeats`, the tests' view of ALE's sticky draws",
}


def _cached_kernels() -> dict[str, CPUDispatcher]:
    kernels = {}
    for info in pkgutil.walk_packages(policylab.__path__, "policylab."):
        if info.name.startswith("policylab.cli") or info.name == "policylab.__main__":
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (
                isinstance(obj, CPUDispatcher)
                and obj.py_func.__module__ == info.name
                and hasattr(obj._cache, "_cache_file")  # cache=True
                and obj.targetoptions.get("inline") != "always"  # compiled only into its callers
            ):
                kernels[f"{info.name}.{name}"] = obj
    return kernels


def test_each_job_leaves_every_cached_kernel_compiled():
    for job in warm_cache.JOBS:
        job()  # a warm cache (as `make setup` leaves it) makes these loads, not compiles
    kernels = _cached_kernels()
    assert len(kernels) > 40
    cold = sorted(name for name, kernel in kernels.items() if name not in NOT_WARMED and not _cached(kernel))
    assert cold == []
