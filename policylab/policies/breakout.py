"""Breakout policies on the shared observation contract, vectorized in numba: `fn(obs, params, serve=True)`.

`obs` is the (N, 9) contract batch, actions int64 in {NOOP, FIRE, RIGHT, LEFT}; the v3 family's parameters and
the planner's rule: docs/breakout.md, "Policies"."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numba
import numpy as np

from policylab.config import load_json_file
from policylab.envs.breakout.contract import FIRE, LEFT, NOOP, RIGHT, SCREEN_W
from policylab.errors import BadInput

V3_PARAMS = (
    "far_cap",
    "near_cap",
    "base_deadzone",
    "near_y",
    "far_lead",
    "near_lead",
    "far_deadzone",
    "near_deadzone",
    "panic_y",
)
V3_SPACE = {
    "far_cap": (4.0, 24.0),
    "near_cap": (8.0, 32.0),
    "base_deadzone": (0.0, 6.0),
    "near_y": (140.0, 185.0),
    "far_lead": (0.0, 6.0),
    "near_lead": (0.0, 6.0),
    "far_deadzone": (0.0, 6.0),
    "near_deadzone": (0.0, 4.0),
    "panic_y": (160.0, 195.0),
}
# Chosen defaults (the original v3 values are unknown): moderate leads, small deadzones, the
# near regime from y 165 (about 24 px above the paddle), panic at 180.
V3_DEFAULTS = {
    "far_cap": 12.0,
    "near_cap": 16.0,
    "base_deadzone": 3.0,
    "near_y": 165.0,
    "far_lead": 2.0,
    "near_lead": 1.0,
    "far_deadzone": 2.0,
    "near_deadzone": 1.0,
    "panic_y": 180.0,
}
# Candidate c182 of the original training loop.
TRAINING_V1 = {
    "far_cap": 10.0,
    "near_cap": 18.0,
    "base_deadzone": 2.0,
    "near_y": 165.0,
    "far_lead": 2.0,
    "near_lead": 3.0,
    "far_deadzone": 2.0,
    "near_deadzone": 1.0,
    "panic_y": 175.0,
}
PLANNER_EXTRA = ("wall_left", "wall_right", "paddle_y")
PLANNER_SPACE = {**V3_SPACE, "wall_left": (0.0, 16.0), "wall_right": (136.0, 160.0), "paddle_y": (170.0, 200.0)}
PLANNER_DEFAULTS = {**V3_DEFAULTS, "wall_left": 8.0, "wall_right": 150.0, "paddle_y": 189.0}


@numba.njit(cache=True, inline="always")
def tracker_action(obs, i, prm, planner, serve):
    """The action of the v3 family (`planner`: planner v1) for row `i` of `obs` with parameter vector
    `prm` (`TrackerForm.vector`). One definition for `_tracker` (the batch call every policy function
    makes) and for the fused shadow loop (`policylab.studies.breakout.episodes.shadow_loop`), which plays it
    inside numba."""
    far_cap, near_cap, base_dz, near_y, far_lead, near_lead, far_dz, near_dz, panic_y = (
        prm[0],
        prm[1],
        prm[2],
        prm[3],
        prm[4],
        prm[5],
        prm[6],
        prm[7],
        prm[8],
    )
    if obs[i, 4] < 0.5:
        return FIRE if serve else NOOP
    x = obs[i, 0] + 1.0
    y = obs[i, 1]
    vx = obs[i, 2]
    vy = obs[i, 3]
    c = obs[i, 5] + 0.5 * obs[i, 6]
    if y >= panic_y:
        target = x
        thr = min(near_dz, base_dz)
    else:
        near = y >= near_y
        if planner and vy > 0.0 and not near:
            lo = prm[9]
            span = prm[10] - lo
            t = (prm[11] - y - 4.0) / vy
            u = (x + vx * t - lo) % (2.0 * span)
            target = lo + (u if u <= span else 2.0 * span - u)
            thr = max(far_dz, 0.5 * far_cap)
        else:
            lead = near_lead if near else far_lead
            target = min(max(x + lead * vx, 0.0), SCREEN_W)
            if near:
                thr = max(near_dz, 0.5 * near_cap)
            elif vy > 0.0:
                thr = max(far_dz, 0.5 * far_cap)
            else:
                thr = max(base_dz, 0.5 * far_cap)
    err = target - c
    if err > thr:
        return RIGHT
    if err < -thr:
        return LEFT
    return NOOP


@numba.njit(cache=True)
def _tracker(obs, prm, planner, serve, out):
    for i in range(obs.shape[0]):
        out[i] = tracker_action(obs, i, prm, planner, serve)


def _vector(params: Mapping[str, float], names: tuple[str, ...]) -> np.ndarray:
    return np.array([float(params[k]) for k in names], dtype=np.float64)


def breakout_policy_v3(obs: np.ndarray, params: Mapping[str, float] = V3_DEFAULTS, serve: bool = True) -> np.ndarray:
    """The lead / deadzone / cap tracker (each parameter: docs/breakout.md, "Policies")."""
    out = np.empty(obs.shape[0], dtype=np.int64)
    _tracker(np.asarray(obs, dtype=np.float32), V3_FORM.vector(params), V3_FORM.planner, bool(serve), out)
    return out


def breakout_policy_planner_v1(
    obs: np.ndarray, params: Mapping[str, float] = PLANNER_DEFAULTS, serve: bool = True
) -> np.ndarray:
    """Landing prediction with wall reflection while the ball falls far away, else v3."""
    out = np.empty(obs.shape[0], dtype=np.int64)
    _tracker(np.asarray(obs, dtype=np.float32), PLANNER_FORM.vector(params), PLANNER_FORM.planner, bool(serve), out)
    return out


@dataclass(frozen=True)
class TrackerForm:
    """A policy that is `tracker_action` with the parameters `names` (in that order) and the `planner`
    flag: what the fused shadow loop needs to play it inside numba. `fn` of its `PolicySpec` must be
    the same function (tests check the fused loop against `fn`, byte for byte)."""

    names: tuple[str, ...]
    planner: bool

    def vector(self, params: Mapping[str, float]) -> np.ndarray:
        return _vector(params, self.names)


V3_FORM = TrackerForm(V3_PARAMS, False)
PLANNER_FORM = TrackerForm(V3_PARAMS + PLANNER_EXTRA, True)


@dataclass(frozen=True)
class PolicySpec:
    name: str
    fn: Callable[..., np.ndarray]
    defaults: dict[str, float]
    space: dict[str, tuple[float, float]]
    tracker: TrackerForm | None = None  # set: the fused shadow loop can play it

    def __call__(self, obs: np.ndarray, params: Mapping[str, float] | None = None, serve: bool = True) -> np.ndarray:
        return self.fn(obs, self.defaults if params is None else params, serve)


POLICIES: dict[str, PolicySpec] = {
    "breakout_policy_v3": PolicySpec("breakout_policy_v3", breakout_policy_v3, V3_DEFAULTS, V3_SPACE, V3_FORM),
    "breakout_policy_training_v1": PolicySpec(
        "breakout_policy_training_v1", breakout_policy_v3, TRAINING_V1, V3_SPACE, V3_FORM
    ),
    "breakout_policy_planner_v1": PolicySpec(
        "breakout_policy_planner_v1", breakout_policy_planner_v1, PLANNER_DEFAULTS, PLANNER_SPACE, PLANNER_FORM
    ),
}


def get_policy(name: str) -> PolicySpec:
    if name not in POLICIES:
        raise BadInput("policy", f"unknown policy {name!r}; expected one of {', '.join(sorted(POLICIES))}")
    return POLICIES[name]


def validate_params(name: str, data: Any, field: str = "params") -> dict[str, float]:
    """Check a full parameter set for policy `name`: every field known, present, numeric, in range.

    Field names may carry the original's `policy_` prefix (`policy_far_cap` == `far_cap`).
    """
    spec = get_policy(name)
    if not isinstance(data, Mapping):
        raise BadInput(field, "must be a JSON object of parameter names to numbers")
    clean: dict[str, float] = {}
    for key, value in data.items():
        short = key[len("policy_") :] if isinstance(key, str) and key.startswith("policy_") else key
        if short not in spec.space:
            raise BadInput(f"{field}.{key}", f"unknown parameter; expected {', '.join(spec.space)}")
        if short in clean:
            raise BadInput(f"{field}.{key}", "given twice (with and without the policy_ prefix)")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
            raise BadInput(f"{field}.{key}", f"must be a number, got {value!r}")
        lo, hi = spec.space[short]
        if not lo <= float(value) <= hi:
            raise BadInput(f"{field}.{key}", f"{value} is out of range [{lo:g}, {hi:g}]")
        clean[short] = float(value)
    missing = [k for k in spec.space if k not in clean]
    if missing:
        raise BadInput(f"{field}.{missing[0]}", "missing")
    return {k: clean[k] for k in spec.space}


def load_params(name: str, path: str | Path | None, field: str = "params") -> dict[str, float]:
    """The policy's defaults, or a validated parameter set from a JSON file.

    The file holds either the parameter object itself or `{"params": {...}, ...}` (as written by
    search tools, `breakout train`'s policy_params.json with its policy and candidate_id beside the
    parameters, and the original's `*_policy_config.json`); the keys beside "params" describe the
    set and are not parameters.
    """
    spec = get_policy(name)
    if path is None:
        return dict(spec.defaults)
    data = load_json_file(path, field)
    if isinstance(data, Mapping) and isinstance(data.get("params"), Mapping):
        data = data["params"]
    return validate_params(name, data, field)


def policy_label(name: str, params: Mapping[str, float]) -> str:
    """The policy as pages name it: its name, and the parameters a --params file changed from its
    defaults (a run of the search's pick and one of the defaults would otherwise read alike)."""
    if not params:  # a network: its name is its file's
        return name
    changed = {k: v for k, v in params.items() if get_policy(name).defaults.get(k) != v}
    if not changed:
        return f"{name} (defaults)"
    return f"{name}, --params {', '.join(f'{k}={v:g}' for k, v in changed.items())} (others default)"
