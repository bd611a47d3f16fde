"""What produced a record: package and library versions, and the CPU features that can change a
result (no times, no host names). `record()` is what the store writes into every record."""

from __future__ import annotations

import os
import platform
from functools import lru_cache
from importlib import metadata

# the features whose presence selects different kernels in numpy's and onnxruntime's float code
_FEATURES = {
    "x86_64": (
        "AVX",
        "FMA3",
        "FMA4",
        "AVX2",
        "AVX512F",
        "AVX512BW",
        "AVX512DQ",
        "AVX512VL",
        "AVX512VNNI",
        "AVX512BF16",
        "AVX512FP16",
    ),
    "aarch64": ("ASIMD", "ASIMDHP", "ASIMDDP", "ASIMDFHM", "SVE"),
}


@lru_cache(maxsize=1)
def versions() -> dict[str, str]:
    out = {}
    for dist in ("policylab", "ale-py", "mujoco", "numpy", "gymnasium", "numba", "torch", "onnxruntime"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "absent"
    return out


@lru_cache(maxsize=1)
def cpu() -> dict[str, str]:
    """This process's machine type, the result-relevant CPU features it has (as numpy detects them, in
    a fixed order) and any features numpy was told to leave unused."""
    from numpy._core._multiarray_umath import __cpu_features__

    machine = platform.machine().lower().replace("amd64", "x86_64").replace("arm64", "aarch64")
    have = [f for f in _FEATURES.get(machine, ()) if __cpu_features__.get(f)]
    return {
        "machine": machine,
        "features": " ".join(have),
        "npy_disabled": os.environ.get("NPY_DISABLE_CPU_FEATURES", "").strip(),
    }


@lru_cache(maxsize=1)
def record() -> dict:
    """The provenance a stored record carries: `versions()` plus ``cpu``."""
    return {**versions(), "cpu": cpu()}
