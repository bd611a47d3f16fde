"""A linear state-feedback policy for the Ant: a = clip(W @ (obs - mean) / std, -1, 1).

Why linear: Mania et al. (2018, "Simple random search provides a competitive approach to RL")
showed linear policies with observation whitening walk on MuJoCo Ant; 216 weights train in
minutes on two CPU cores with random search, and the whole checkpoint is a few kB of .npz.
The policy is deterministic and a pure function of the observation batch.
"""

from __future__ import annotations

import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from policylab.envs.ant import ACT_DIM, OBS_DIM
from policylab.errors import BadInput
from policylab.fileio import arrays_to_bytes, atomic_write_bytes, read_arrays
from policylab.hashing import sha256_hex

EXPECTED_SHAPES = {"weights": (ACT_DIM, OBS_DIM), "obs_mean": (OBS_DIM,), "obs_std": (OBS_DIM,)}


@dataclass(frozen=True)
class LinearPolicy:
    weights: np.ndarray  # (act_dim, obs_dim)
    obs_mean: np.ndarray  # (obs_dim,)
    obs_std: np.ndarray  # (obs_dim,)

    def act(self, obs: np.ndarray) -> np.ndarray:
        """(B, obs_dim) -> (B, act_dim) actions in [-1, 1]."""
        return act(self.weights, self.obs_mean, self.obs_std, obs)

    def arrays(self) -> dict[str, np.ndarray]:
        return {"weights": self.weights, "obs_mean": self.obs_mean, "obs_std": self.obs_std}


def act(weights: np.ndarray, obs_mean: np.ndarray, obs_std: np.ndarray, obs: np.ndarray) -> np.ndarray:
    """Batched linear policy; `weights` may carry a leading batch axis (B, act, obs) during training.

    One policy (2-D weights) is evaluated with an explicit, fixed-order sum over observation
    entries, so a world's actions are bit-identical whatever batch it is in: a BLAS matmul
    (``z @ W.T``) picks kernels by batch size and changed the last bits of actions between a
    batch of 1 and a batch of 2 (found by the equivalence gate). Training's per-direction
    weights (3-D) use einsum; they only need to be reproducible for a fixed batch shape.
    """
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


def load(path: str | Path) -> LinearPolicy:
    """The policy in checkpoint `path`; a file that is not an .npz, a corrupt one, or one whose arrays do
    not fit the Ant (weights (8, 27), finite, obs_std > 0) is bad input naming the checkpoint."""
    p = Path(path)
    if not p.is_file():
        raise BadInput("checkpoint", f"file not found: {p}")
    if not zipfile.is_zipfile(p):
        raise BadInput("checkpoint", f"{p} is not an .npz file")
    try:
        arrays = read_arrays(p)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise BadInput("checkpoint", f"{p} is a corrupt .npz ({type(exc).__name__}: {exc})") from None
    missing = [k for k in EXPECTED_SHAPES if k not in arrays]
    if missing:
        raise BadInput("checkpoint", f"{p} is not a linear Ant policy (missing {', '.join(missing)})")
    for name, shape in EXPECTED_SHAPES.items():
        a = arrays[name]
        if a.shape != shape or a.dtype.kind != "f":
            raise BadInput("checkpoint", f"{p}: {name} is {a.dtype} {a.shape}; the Ant's linear policy needs "
                           f"float {shape}")
        if not np.isfinite(a).all():
            raise BadInput("checkpoint", f"{p}: {name} holds non-finite values")
    if not (arrays["obs_std"] > 0).all():
        raise BadInput("checkpoint", f"{p}: obs_std must be positive")
    return LinearPolicy(arrays["weights"], arrays["obs_mean"], arrays["obs_std"])
