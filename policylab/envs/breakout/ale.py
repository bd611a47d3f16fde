"""Real Atari Breakout (ALE, raw `ALEInterface`) behind the shared feature contract.

Why raw ALE, what the seed drives, the RAM features: docs/breakout.md, "Choices and why" (bytes named in `ram.py`)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from policylab.config import StrictModel
from policylab.envs.breakout.contract import N_FEATURES, F
from policylab.envs.breakout.ram import (
    BALL_X_OFFSET,
    BALL_Y_OFFSET,
    PADDLE_X_OFFSET,
    RAM_BALL_X,
    RAM_BALL_Y,
    RAM_LIVES,
    RAM_PADDLE_HALF_W,
    RAM_PADDLE_X,
    RAM_SCORE_HI,
    RAM_SCORE_LO,
)


class Protocol(StrictModel):
    """How an episode is played; recorded in every rollout record (part of its key)."""

    frameskip: int = Field(4, ge=1, le=16, description="emulator frames per agent step")
    sticky: float = Field(0.25, ge=0.0, le=1.0, description="ALE repeat_action_probability")
    action_set: Literal["minimal"] = Field("minimal", description="NOOP, FIRE, RIGHT, LEFT")
    max_steps: int = Field(1800, ge=1, le=1_000_000, description="horizon in agent steps")
    serve: Literal["auto", "never"] = Field(
        "auto",
        description="auto: FIRE whenever no ball is in play (every life is played); never: only the "
        "first ball is served, later FIREs become NOOP (the original's one-ball episodes)",
    )


def bcd(byte: int) -> int:
    return (byte >> 4) * 10 + (byte & 0x0F)


def ram_features(ram: np.ndarray, prev: np.ndarray | None) -> np.ndarray:
    """The contract's 9 features from one RAM snapshot (and the previous one, for velocities)."""
    obs = np.zeros(N_FEATURES, dtype=np.float64)
    in_play = ram[RAM_BALL_Y] != 0
    if in_play:  # no ball: x = y = 0, as the shadow simulator reports it (RAM keeps a stale x)
        obs[F["ball_x"]] = int(ram[RAM_BALL_X]) + BALL_X_OFFSET
        obs[F["ball_y"]] = int(ram[RAM_BALL_Y]) + BALL_Y_OFFSET
    obs[F["ball_in_play"]] = 1.0 if in_play else 0.0
    if in_play and prev is not None and prev[F["ball_in_play"]] > 0:
        obs[F["ball_vx"]] = obs[F["ball_x"]] - prev[F["ball_x"]]
        obs[F["ball_vy"]] = obs[F["ball_y"]] - prev[F["ball_y"]]
    obs[F["paddle_x"]] = int(ram[RAM_PADDLE_X]) + PADDLE_X_OFFSET
    obs[F["paddle_width"]] = 2 * int(ram[RAM_PADDLE_HALF_W])
    obs[F["lives"]] = int(ram[RAM_LIVES])
    obs[F["score"]] = bcd(int(ram[RAM_SCORE_HI]) & 0x0F) * 100 + bcd(int(ram[RAM_SCORE_LO]))
    return obs


class AleBreakout:
    """One Atari Breakout game on a fresh emulator seeded with `seed` (one env per process)."""

    def __init__(self, protocol: Protocol, seed: int):
        from ale_py import ALEInterface, LoggerMode, roms

        ALEInterface.setLoggerMode(LoggerMode.Error)
        self.protocol = protocol
        self.ale = ALEInterface()
        self.ale.setInt("random_seed", int(seed))
        self.ale.setFloat("repeat_action_probability", float(protocol.sticky))
        self.ale.setInt("frame_skip", int(protocol.frameskip))
        self.ale.loadROM(roms.get_rom_path("breakout"))
        self._actions = self.ale.getMinimalActionSet()
        self._obs: np.ndarray | None = None

    def reset(self) -> np.ndarray:
        self.ale.reset_game()
        self._obs = ram_features(self.ale.getRAM(), None)
        return self._obs.copy()

    def step(self, action: int) -> tuple[np.ndarray, float, bool]:
        """Play one agent step (frameskip frames); returns (features, reward, game over)."""
        reward = float(self.ale.act(self._actions[int(action)]))
        self._obs = ram_features(self.ale.getRAM(), self._obs)
        return self._obs.copy(), reward, bool(self.ale.game_over())

    def ram(self) -> np.ndarray:
        return self.ale.getRAM().copy()

    def frame(self) -> np.ndarray:
        """The current 210x160 RGB screen."""
        return self.ale.getScreenRGB()


def frame_emulator(seed: int):
    """A reset `ALEInterface` that plays one frame per `act` with no sticky actions of its own: what the
    trace recorder and the exact model's checks drive frame by frame (they decide sticky themselves)."""
    env = AleBreakout(Protocol(frameskip=1, sticky=0.0), seed)
    env.reset()
    return env.ale
