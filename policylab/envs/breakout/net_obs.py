"""The observation a Breakout network sees, built in one place for every path that feeds one.

Used by the runner, the learner and the Gymnasium env's `net_obs`; layout: docs/breakout.md, "Network policies"."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np

from policylab.envs.breakout.contract import N_FEATURES
from policylab.errors import BadInput

WALL_ROWS, WALL_COLS = 6, 18
MAX_HISTORY = 8
OBS_METADATA_KEY = "policylab.breakout_obs"

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
            raise BadInput(
                field, f"metadata {OBS_METADATA_KEY!r} is not a valid observation spec: {text[:120]!r}"
            ) from None


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

    def history(self) -> np.ndarray:
        """A copy of every env's feature history (a learner's checkpoint); `set_history` puts it back."""
        return self._hist.copy()

    def set_history(self, hist: np.ndarray) -> None:
        self._hist[...] = hist

    def _vector(self, walls: np.ndarray | None) -> np.ndarray:
        n = self._hist.shape[0]
        parts = [self._hist.reshape(n, -1)]
        if self.spec.wall:
            parts.append(np.asarray(walls, dtype=np.float32).reshape(n, WALL_ROWS * WALL_COLS))
        return np.concatenate(parts, axis=1)
