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


def test_the_vector_env_s_layouts_run_on_the_kernels_the_install_compiled():
    """Smaller stacks, RGB, and stacks large enough to be written ahead use the compiled versions the install
    left (one per kernel): a layout that compiled a version of its own would compile at a user's first use, and
    in each test worker. (Stacks of more than ale-py's default 4 frames do get versions of their own.)"""
    import numpy as np

    from policylab.envs.breakout import vector_kernel
    from policylab.envs.breakout.vector import BreakoutVectorEnv

    warm_cache._vector_env()
    kernels = {name: obj for name, obj in vars(vector_kernel).items() if isinstance(obj, CPUDispatcher)}
    compiled = {name: list(kernel.signatures) for name, kernel in kernels.items()}
    assert compiled["step_kernel"] and compiled["prime"]  # the job reaches both, writing ahead included
    for stack_num in (1, 2, 3):
        for n, layout in ((3, {}), (12, {"grayscale": False, "img_height": 200, "img_width": 150})):
            venv = BreakoutVectorEnv(n, stack_num=stack_num, **layout)
            venv.reset(seed=stack_num)
            for _ in range(stack_num + 1):
                venv.step(np.arange(n) % 4)
            venv.close()
    compiled_after = {name: list(kernel.signatures) for name, kernel in kernels.items()}
    assert compiled_after == compiled
