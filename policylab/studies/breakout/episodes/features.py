"""Per-episode features (the original audit's), computed the same way for both environments.

Input: `obs` (N+1, 9) contract rows (row 0 after reset) and `reward` (N,); definitions: docs/breakout.md,
"Choices and why"."""

from __future__ import annotations

import numpy as np

from policylab.envs.breakout.contract import F

RAM_FIELDS = (  # the ball's and paddle's, read from the game state (None for an episode that records no RAM)
    "paddle_abs_delta_mean",
    "paddle_abs_delta_max",
    "ball_abs_vx_mean",
    "ball_abs_vy_mean",
    "ball_x_range",
    "ball_y_range",
)
FEATURE_FIELDS = (
    "score",
    "steps",
    "done",
    "reward_count",
    "first_reward_step",
    *RAM_FIELDS,
    "lives_start",
    "lives_end",
)


def _range(values: np.ndarray) -> list[float] | None:
    return [float(values.min()), float(values.max())] if values.size else None


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if values.size else 0.0


def episode_features(obs: np.ndarray, reward: np.ndarray, done: bool) -> dict:
    """The original's per-episode row (without seed/episode), from one replay."""
    obs = np.asarray(obs, dtype=np.float64)
    reward = np.asarray(reward, dtype=np.float64)
    steps = int(reward.size)
    post = obs[1:]
    in_play = post[:, F["ball_in_play"]] > 0
    both = in_play[1:] & in_play[:-1]
    dx = np.where(both, np.abs(np.diff(post[:, F["ball_x"]])), 0.0)
    dy = np.where(both, np.abs(np.diff(post[:, F["ball_y"]])), 0.0)
    paddle = np.abs(np.diff(post[:, F["paddle_x"]]))
    rewarded = np.nonzero(reward > 0)[0]
    return {
        "score": float(reward.sum()),
        "steps": steps,
        "done": bool(done),
        "reward_count": int(rewarded.size),
        "first_reward_step": int(rewarded[0]) + 1 if rewarded.size else None,
        "paddle_abs_delta_mean": _mean(paddle),
        "paddle_abs_delta_max": float(paddle.max()) if paddle.size else 0.0,
        "ball_abs_vx_mean": _mean(dx),
        "ball_abs_vy_mean": _mean(dy),
        "ball_x_range": _range(post[in_play, F["ball_x"]]),
        "ball_y_range": _range(post[in_play, F["ball_y"]]),
        "lives_start": int(obs[0, F["lives"]]),
        "lives_end": int(obs[-1, F["lives"]]),
    }
