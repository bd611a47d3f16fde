"""The linear policy file, for any robot: a = clip(W @ (obs - mean) / std, -1, 1).

A `.npz` of ``weights`` (act_dim, obs_dim), ``obs_mean`` and ``obs_std``; acts with a fixed-order sum, so a
world's actions are the same bits in any batch and on any CPU (training's 3-D einsum need not be)."""

from __future__ import annotations

import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from policylab.errors import BadInput
from policylab.fileio import arrays_to_bytes, atomic_write_bytes, read_arrays
from policylab.hashing import sha256_hex


@dataclass(frozen=True)
class LinearPolicy:
    weights: np.ndarray  # (act_dim, obs_dim)
    obs_mean: np.ndarray  # (obs_dim,)
    obs_std: np.ndarray  # (obs_dim,)

    @property
    def obs_dim(self) -> int:
        return self.weights.shape[1]

    @property
    def act_dim(self) -> int:
        return self.weights.shape[0]

    def act(self, obs: np.ndarray) -> np.ndarray:
        """(B, obs_dim) -> (B, act_dim) actions in [-1, 1]."""
        return act(self.weights, self.obs_mean, self.obs_std, obs)

    def arrays(self) -> dict[str, np.ndarray]:
        return {"weights": self.weights, "obs_mean": self.obs_mean, "obs_std": self.obs_std}


def act(weights: np.ndarray, obs_mean: np.ndarray, obs_std: np.ndarray, obs: np.ndarray) -> np.ndarray:
    """Batched linear policy; `weights` may carry a leading batch axis (B, act, obs) during training."""
    z = (obs - obs_mean) / obs_std
    if weights.ndim == 3:
        a = np.einsum("bao,bo->ba", weights, z)
    else:
        a = np.zeros((len(z), weights.shape[0]))
        for j in range(weights.shape[1]):
            a += z[:, j, None] * weights[None, :, j]
    return np.clip(a, -1.0, 1.0)


def save(path: str | Path, policy: LinearPolicy, extra: dict[str, np.ndarray] | None = None) -> str:
    """Write the checkpoint (byte-deterministic npz); returns its sha256."""
    blob = arrays_to_bytes({**policy.arrays(), **(extra or {})})
    atomic_write_bytes(path, blob)
    return sha256_hex(blob)


def read_npz(path: str | Path, field: str = "checkpoint") -> dict[str, np.ndarray]:
    p = Path(path)
    if not p.is_file():
        raise BadInput(field, f"file not found: {p}")
    if not zipfile.is_zipfile(p):
        raise BadInput(field, f"{p} is not an .npz file")
    try:
        return read_arrays(p)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise BadInput(field, f"{p} is a corrupt .npz ({type(exc).__name__}: {exc})") from None


def load(
    path: str | Path,
    obs_dim: int | None = None,
    act_dim: int | None = None,
    *,
    robot_name: str = "the robot",
    field: str = "checkpoint",
) -> LinearPolicy:
    """The linear policy in `path`, checked against the robot's sizes when given."""
    p = Path(path)
    arrays = read_npz(p, field)
    missing = [k for k in ("weights", "obs_mean", "obs_std") if k not in arrays]
    if missing:
        raise BadInput(field, f"{p} is not a linear policy (missing {', '.join(missing)})")
    w = arrays["weights"]
    if w.ndim != 2 or w.dtype.kind != "f":
        raise BadInput(field, f"{p}: weights is {w.dtype} {w.shape}; a linear policy needs a float (act, obs) matrix")
    a_dim, o_dim = w.shape
    want = (act_dim if act_dim is not None else a_dim, obs_dim if obs_dim is not None else o_dim)
    shapes = {"weights": want, "obs_mean": (want[1],), "obs_std": (want[1],)}
    for name, shape in shapes.items():
        a = arrays[name]
        if a.shape != shape or a.dtype.kind != "f":
            raise BadInput(
                field,
                f"{p}: {name} is {a.dtype} {a.shape}; {robot_name}'s linear policy needs float "
                f"{shape} (observation {want[1]}, action {want[0]})",
            )
        if not np.isfinite(a).all():
            raise BadInput(field, f"{p}: {name} holds non-finite values")
    if not (arrays["obs_std"] > 0).all():
        raise BadInput(field, f"{p}: obs_std must be positive")
    return LinearPolicy(arrays["weights"], arrays["obs_mean"], arrays["obs_std"])
