"""Network policies for Breakout: the observation a network sees, and ONNX files that act on it.

Why a second observation beside the 9 contract features: a memoryless tracker needs only the ball
and the paddle, but a learned policy that aims needs the brick wall, and one that reads motion
from frames needs a short history. Both environments can give both (ALE: the wall is the playfield
bytes ram[0:36], decoded by `trace.brick_flags`; the shadow: `ShadowBreakout.walls`), so a network
cannot tell which one it plays, exactly as a tracker cannot.

The observation of one env at one agent step, float32, in this order:

- the 9 contract features of the last `history` agent steps, newest first, each scaled by
  `FEATURE_SCALE` so every value is of order 1 (before the first step the history repeats the
  reset observation);
- when `wall` is set, the 6 x 18 live-brick flags (0/1), top row first, left to right.

A network file is an ONNX model (one loader: `policylab.policies.onnx`) whose input is that vector
and whose output is 4 logits over the minimal action set (NOOP, FIRE, RIGHT, LEFT). The file says
which observation it takes in its metadata (`OBS_METADATA_KEY`, a JSON object of `NetObsSpec`), so a
network trained elsewhere on the same features runs the same way. Acting is greedy (the first
largest logit); the protocol's serve rule is applied by the episode runner, as for every policy.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from policylab.envs.breakout_contract import N_FEATURES
from policylab.errors import BadInput

WALL_ROWS, WALL_COLS = 6, 18
N_ACTIONS = 4
OBS_METADATA_KEY = "policylab.breakout_obs"
MAX_HISTORY = 8

# ball_x, ball_y, ball_vx, ball_vy, ball_in_play, paddle_x, paddle_width, lives, score
FEATURE_SCALE = np.array([1 / 160, 1 / 210, 1 / 8, 1 / 8, 1.0, 1 / 160, 1 / 16, 1 / 5, 1 / 1000], dtype=np.float32)


@dataclass(frozen=True)
class NetObsSpec:
    """Which observation a network takes: `history` steps of features, and the wall or not."""

    history: int = 1
    wall: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.history, int) or not 1 <= self.history <= MAX_HISTORY:
            raise BadInput("history", f"must be an integer from 1 to {MAX_HISTORY}")
        if not isinstance(self.wall, bool):
            raise BadInput("wall", "must be true or false")

    @property
    def dim(self) -> int:
        return N_FEATURES * self.history + (WALL_ROWS * WALL_COLS if self.wall else 0)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str, field: str = "policy") -> NetObsSpec:
        try:
            data = json.loads(text)
            return cls(history=data["history"], wall=data["wall"])
        except (ValueError, KeyError, TypeError):
            raise BadInput(field, f"metadata {OBS_METADATA_KEY!r} is not a valid observation spec: {text[:120]!r}") from None


class NetObserver:
    """Builds the network observation of N envs step by step (the history is per env state)."""

    def __init__(self, spec: NetObsSpec, n_envs: int):
        self.spec = spec
        self._hist = np.zeros((n_envs, spec.history, N_FEATURES), dtype=np.float32)

    def reset(self, features: np.ndarray, walls: np.ndarray | None, rows: np.ndarray | None = None) -> np.ndarray:
        """Start the history of `rows` (default: all) at `features`; returns every env's observation."""
        scaled = np.asarray(features, dtype=np.float32) * FEATURE_SCALE
        sel = slice(None) if rows is None else rows
        self._hist[sel] = scaled[sel, None, :]
        return self._vector(walls)

    def observe(self, features: np.ndarray, walls: np.ndarray | None) -> np.ndarray:
        """Push one agent step's features (N, 9) and walls (N, 108); returns (N, dim) float32."""
        if self.spec.history > 1:
            self._hist[:, 1:] = self._hist[:, :-1]
        self._hist[:, 0] = np.asarray(features, dtype=np.float32) * FEATURE_SCALE
        return self._vector(walls)

    def _vector(self, walls: np.ndarray | None) -> np.ndarray:
        n = self._hist.shape[0]
        parts = [self._hist.reshape(n, -1)]
        if self.spec.wall:
            parts.append(np.asarray(walls, dtype=np.float32).reshape(n, WALL_ROWS * WALL_COLS))
        return np.concatenate(parts, axis=1)


@dataclass
class BreakoutNetPolicy:
    """An ONNX Breakout network with the observation its file declares; greedy actions."""

    path: Path
    spec: NetObsSpec
    network: object  # policylab.policies.onnx.OnnxPolicy

    def observer(self, n_envs: int) -> NetObserver:
        return NetObserver(self.spec, n_envs)

    def act(self, obs: np.ndarray) -> np.ndarray:
        """(N, dim) observations -> (N,) int64 actions: the first largest logit."""
        logits = self.network.act(obs)
        return np.argmax(logits, axis=1).astype(np.int64)


def load(path: str | Path, field: str = "policy") -> BreakoutNetPolicy:
    """The network in `path`, checked: a valid ONNX policy whose metadata names its observation and
    whose input and output sizes fit it (`BadInput` naming `field` otherwise)."""
    import onnx

    from policylab.policies import onnx as onnx_policy

    p = Path(path)
    if not p.is_file():
        raise BadInput(field, f"file not found: {p}")
    try:
        meta = {m.key: m.value for m in onnx.load_from_string(p.read_bytes()).metadata_props}
    except Exception:  # not an ONNX model: the one loader names the problem
        onnx_policy.load(p, field=field)
        raise
    if OBS_METADATA_KEY not in meta:
        raise BadInput(field, f"{p}: no {OBS_METADATA_KEY!r} metadata; a Breakout network must say which "
                       "observation it takes (see docs/breakout.md)")
    spec = NetObsSpec.from_json(meta[OBS_METADATA_KEY], field)
    net = onnx_policy.load(p, spec.dim, N_ACTIONS, what="the Breakout observation", field=field)
    return BreakoutNetPolicy(p, spec, net)


def stamp(model, spec: NetObsSpec) -> None:
    """Write `spec` into an ONNX model's metadata (the exporter calls this before saving)."""
    entry = model.metadata_props.add()
    entry.key = OBS_METADATA_KEY
    entry.value = spec.to_json()
