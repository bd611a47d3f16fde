"""A policy is a file: the linear `.npz` (`policies.linear`) or an ONNX network (`policies.onnx`).

`load_policy` picks the loader by suffix and checks the sizes; a ``NAME.obs_norm.json`` beside the file whitens
the observation and names the policy too (docs/boundary.md, "Policies are files")."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from policylab.errors import BadInput

SUFFIXES = {".npz": "linear", ".onnx": "onnx"}
OBS_NORM_SUFFIX = ".obs_norm.json"


def obs_norm_file(path: str | Path) -> Path | None:
    """The normalisation file beside policy file `path` (``NAME.obs_norm.json``), or None."""
    p = Path(path).with_suffix(OBS_NORM_SUFFIX)
    return p if p.is_file() else None


@dataclass(frozen=True)
class Normalized:
    """A policy acting on (obs - mean) / std."""

    policy: object
    mean: np.ndarray
    std: np.ndarray

    def act(self, obs: np.ndarray) -> np.ndarray:
        return self.policy.act((obs - self.mean) / self.std)


def _read_norm(path: Path, obs_dim: int | None, field: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        data = json.loads(path.read_text())
        mean, std = (np.asarray(data[k], dtype=float) for k in ("mean", "std"))
    except (OSError, ValueError, KeyError, TypeError):
        raise BadInput(
            field, f"{path} is not a normalisation file (a JSON object with number lists mean and std)"
        ) from None
    want = obs_dim if obs_dim is not None else len(mean)
    if mean.shape != (want,) or std.shape != (want,):
        raise BadInput(field, f"{path}: mean and std need {want} values each (they have {mean.size} and {std.size})")
    if not (np.isfinite(mean).all() and np.isfinite(std).all() and (std > 0).all()):
        raise BadInput(field, f"{path}: mean and std must be finite and std positive")
    return mean, std


def policy_kind(path: str | Path) -> str:
    kind = SUFFIXES.get(Path(path).suffix.lower())
    if kind is None:
        raise BadInput("checkpoint", f"{path}: a policy file is a linear .npz or an .onnx network")
    return kind


def named_robot(path: str | Path) -> str | None:
    """The robot a policy file names in its own metadata: an ONNX file's ``policylab.robot`` entry
    (`policies.mlp.robot_metadata`, which `boundary learn` writes; add it to any ONNX file with the onnx
    package, docs/boundary.md), else None (a linear .npz, or a file that is not ONNX: its loader says why)."""
    if SUFFIXES.get(Path(path).suffix.lower()) != "onnx":
        return None
    import onnx

    from policylab.policies.mlp import ROBOT_META

    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception:  # not ONNX: the loader reports it
        return None
    return next((m.value for m in model.metadata_props if m.key == ROBOT_META), None)


def load_policy(
    path: str | Path,
    obs_dim: int | None = None,
    act_dim: int | None = None,
    *,
    what: str = "the robot",
    field: str = "checkpoint",
    output: str | None = None,
):
    """The policy file `path` checked against the sizes; `output` names an ONNX file's action output."""
    kind = policy_kind(path)
    if kind == "linear":
        from policylab.policies import linear

        policy = linear.load(path, obs_dim, act_dim, robot_name=what, field=field)
    else:
        from policylab.policies import onnx

        policy = onnx.load(path, obs_dim, act_dim, what=what, field=field, output=output)
    norm = obs_norm_file(path)
    return policy if norm is None else Normalized(policy, *_read_norm(norm, obs_dim, field))
