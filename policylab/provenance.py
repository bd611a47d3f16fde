"""What produced a record: package and library versions (no times, no host names)."""

from __future__ import annotations

from functools import lru_cache
from importlib import metadata


@lru_cache(maxsize=1)
def versions() -> dict[str, str]:
    out = {}
    for dist in ("policylab", "ale-py", "mujoco", "numpy", "gymnasium", "numba", "torch"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "absent"
    return out
