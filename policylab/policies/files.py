"""A policy is a file: the linear `.npz` (`policies.linear`) or an ONNX network (`policies.onnx`).

`load_policy(path, obs_dim, act_dim)` picks the loader by suffix and checks the file against the
sizes the robot gives and takes, before anything is created; anything wrong is `BadInput` naming the
field (one line, exit 2). Both kinds expose ``act(obs) -> actions`` on (B, obs_dim) float64 batches.
"""

from __future__ import annotations

from pathlib import Path

from policylab.errors import BadInput

SUFFIXES = {".npz": "linear", ".onnx": "onnx"}


def policy_kind(path: str | Path) -> str:
    kind = SUFFIXES.get(Path(path).suffix.lower())
    if kind is None:
        raise BadInput("checkpoint", f"{path}: a policy file is a linear .npz or an .onnx network")
    return kind


def load_policy(path: str | Path, obs_dim: int | None = None, act_dim: int | None = None, *,
                what: str = "the robot", field: str = "checkpoint", output: str | None = None):
    """The policy file `path` checked against the sizes; `output` names an ONNX file's action output."""
    kind = policy_kind(path)
    if kind == "linear":
        from policylab.policies import linear

        return linear.load(path, obs_dim, act_dim, robot_name=what, field=field)
    from policylab.policies import onnx

    return onnx.load(path, obs_dim, act_dim, what=what, field=field, output=output)
