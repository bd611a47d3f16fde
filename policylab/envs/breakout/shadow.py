"""Shadow Breakout: `ShadowBreakout`, a vectorized, seeded batch of either model behind one API, and its Gymnasium env.

Importing it registers `policylab/ShadowBreakout-v0`; docs/breakout.md, "API"."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from policylab.envs.breakout import ale_random
from policylab.envs.breakout.contract import N_FEATURES, SCREEN_H, SCREEN_W
from policylab.envs.breakout.net_obs import FEATURE_SCALE, NetObserver, NetObsSpec
from policylab.envs.breakout.params import BreakoutParams, RomParams, ShadowParams, resolve_params
from policylab.envs.breakout.physics import kernel as physics_kernel
from policylab.envs.breakout.physics.render import render_frame
from policylab.envs.breakout.presets import DEFAULT_PRESET
from policylab.envs.breakout.ram import (
    BALL_X_OFFSET,
    BALL_Y_OFFSET,
    PADDLE_X_OFFSET,
    RAM_BALL_X,
    RAM_BALL_Y,
    RAM_N,
    RAM_PADDLE_X,
)
from policylab.envs.breakout.rom import kernel as rom_kernel
from policylab.envs.breakout.rom.render import render_ram
from policylab.errors import BadInput

GYM_ID = "policylab/ShadowBreakout-v0"


class _Physics:
    """The physics model's side of the batch: its kernel, and the wall kept in `bricks`."""

    kernel = physics_kernel

    def __init__(self, params: ShadowParams):
        self.params = params
        self.shape = (params.brick_rows, params.brick_cols)

    def walls(self, I: np.ndarray, bricks: np.ndarray) -> np.ndarray:
        return bricks.reshape(bricks.shape[0], *self.shape).copy()

    def positions(self, F: np.ndarray, I: np.ndarray) -> tuple[float, float, float, bool]:
        return (
            float(F[physics_kernel.BX]),
            float(F[physics_kernel.BY]),
            float(F[physics_kernel.PX]),
            bool(I[physics_kernel.IN_PLAY]),
        )

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Feature bounds of any state: positions inside the screen with a ball leaving it below or to the side
        (at most one step of the fastest ball beyond it), velocities across it, the preset's widths and lives;
        the score has no bound (walls refill): the largest float32."""
        p = self.params
        width = max(p.paddle_width, p.paddle_width_small)
        low = [-SCREEN_W, -SCREEN_H, -2 * SCREEN_W, -2 * SCREEN_H, 0, -width, 0, 0, 0]
        high = [
            2 * SCREEN_W,
            2 * SCREEN_H,
            2 * SCREEN_W,
            2 * SCREEN_H,
            1,
            SCREEN_W,
            width,
            p.lives,
            np.finfo(np.float32).max,
        ]
        return np.array(low, dtype=np.float32), np.array(high, dtype=np.float32)

    def render(self, F: np.ndarray, I: np.ndarray, bricks: np.ndarray) -> np.ndarray:
        ball = (F[physics_kernel.BX], F[physics_kernel.BY]) if I[physics_kernel.IN_PLAY] else None
        return render_frame(
            self.params,
            bricks,
            ball,
            F[physics_kernel.PX],
            F[physics_kernel.PW],
            int(I[physics_kernel.SCORE]),
            int(I[physics_kernel.LIVES]),
        )


class _Rom:
    """The ROM model's side of the batch: its kernel, and everything read from the RAM in `I` (no `bricks`)."""

    kernel = rom_kernel
    shape = (RomParams.brick_rows, RomParams.brick_cols)

    def __init__(self, params: RomParams):
        self.params = params

    def walls(self, I: np.ndarray, bricks: np.ndarray) -> np.ndarray:
        return rom_kernel.brick_flags(I)

    def positions(self, F: np.ndarray, I: np.ndarray) -> tuple[float, float, float, bool]:
        return (
            float(I[RAM_BALL_X] + BALL_X_OFFSET),
            float(I[RAM_BALL_Y] + BALL_Y_OFFSET),
            float(I[RAM_PADDLE_X] + PADDLE_X_OFFSET),
            bool(I[RAM_BALL_Y] != 0),
        )

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Feature bounds of any state, from the RAM bytes the features read (`_observe`): ball x = RAM_BALL_X +
        BALL_X_OFFSET, y = RAM_BALL_Y + BALL_Y_OFFSET (0 without a ball), their step differences, paddle x =
        RAM_PADDLE_X + PADDLE_X_OFFSET inside the ROM's limits, width 2 * RAM_PADDLE_HALF_W (at most 16), 5 lives,
        and ALE's score formula's largest value."""
        x0, y0 = BALL_X_OFFSET, BALL_Y_OFFSET
        low = [x0, 0, -255, -255, 0, rom_kernel.PADDLE_LIMITS[0] + PADDLE_X_OFFSET, 0, 0, 0]
        high = [
            255 + x0,
            255 + y0,
            255,
            255,
            1,
            rom_kernel.PADDLE_LIMITS[1] + PADDLE_X_OFFSET,
            16,
            5,
            15 + 10 * 15 + 100 * 15,
        ]
        return np.array(low, dtype=np.float32), np.array(high, dtype=np.float32)

    def render(self, F: np.ndarray, I: np.ndarray, bricks: np.ndarray) -> np.ndarray:
        return render_ram(I)


class ShadowBreakout:
    """A batch of `n_envs` shadow Breakout games sharing one world's parameters (`ShadowParams` or `RomParams`).

    reset() -> obs float32 (N, 9); step(actions int (N,)) -> (obs, reward float32 (N,),
    terminated bool (N,), truncated bool (N,), info). `max_steps` (optional) truncates at that
    many agent steps; truncated and terminated envs ignore further actions.
    """

    def __init__(
        self,
        n_envs: int,
        params: BreakoutParams | str | Path = DEFAULT_PRESET,
        seeds: Sequence[int] | np.ndarray | None = None,
        max_steps: int | None = None,
    ):
        if int(n_envs) <= 0:
            raise BadInput("n_envs", "must be a positive integer")
        if max_steps is not None and int(max_steps) <= 0:
            raise BadInput("max_steps", "must be a positive integer")
        self.n_envs = int(n_envs)
        self.params = resolve_params(params)
        self.max_steps = None if max_steps is None else int(max_steps)
        self._model = _Rom(self.params) if isinstance(self.params, RomParams) else _Physics(self.params)
        self._p = self.params.kernel_record()
        self._K = self._model.kernel
        n = self.n_envs
        self._F = np.zeros((n, self._K.NF), dtype=np.float64)
        self._I = np.zeros((n, self._K.NI), dtype=np.int64)
        wall = 0 if isinstance(self._model, _Rom) else self.params.brick_rows * self.params.brick_cols
        self._bricks = np.zeros((n, wall), dtype=np.uint8)  # the ROM model's wall is in its RAM
        self._rng = np.zeros(n, dtype=np.uint64)
        self._mt = np.zeros((n, ale_random.ROW if self.params.rng == "ale" else 0), dtype=np.uint32)
        self._obs = np.zeros((n, N_FEATURES), dtype=np.float32)
        self._rew = np.zeros(n, dtype=np.float32)
        self._term = np.zeros(n, dtype=np.bool_)
        self.seeds = self._check_seeds(np.arange(n) if seeds is None else seeds)

    def _check_seeds(self, seeds) -> np.ndarray:
        arr = np.asarray(seeds, dtype=np.int64).reshape(-1)
        if arr.shape[0] != self.n_envs:
            raise BadInput("seeds", f"need {self.n_envs} seeds, got {arr.shape[0]}")
        if (arr < 0).any():
            raise BadInput("seeds", "seeds must be non-negative")
        return arr.copy()

    def reset(self, seeds: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
        if seeds is not None:
            self.seeds = self._check_seeds(seeds)
        self._K.reset_kernel(self._p, self._F, self._I, self._bricks, self._rng, self._mt, self.seeds, self._obs)
        self._term[:] = False
        return self._obs.copy()

    def reset_rows(self, rows: Sequence[int] | np.ndarray, seeds: Sequence[int] | np.ndarray) -> np.ndarray:
        """Reset only envs `rows` onto `seeds` (a learner restarts each finished env while the others
        play on): the reset kernel on sliced copies of their state, written back; returns every env's
        observation. Each reset env is bit-identical to a fresh batch reset on its seed."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        seeds = np.asarray(seeds, dtype=np.int64).reshape(-1)
        if seeds.shape != rows.shape or (seeds < 0).any():
            raise BadInput("seeds", f"need {rows.size} non-negative seeds, got {seeds.size}")
        part = [a[rows] for a in (self._F, self._I, self._bricks, self._rng, self._mt, self._obs)]
        self._K.reset_kernel(self._p, *part[:5], seeds, part[5])
        for a, v in zip((self._F, self._I, self._bricks, self._rng, self._mt, self._obs), part):
            a[rows] = v
        self._term[rows] = False
        self.seeds[rows] = seeds
        return self._obs.copy()

    STATE_ARRAYS = ("_F", "_I", "_bricks", "_rng", "_mt", "_obs", "_term", "seeds")

    def get_state(self) -> dict[str, np.ndarray]:
        """Copies of every state array (a learner's checkpoint); `set_state` puts them back."""
        return {k.lstrip("_"): getattr(self, k).copy() for k in self.STATE_ARRAYS}

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        for k in self.STATE_ARRAYS:
            getattr(self, k)[...] = state[k.lstrip("_")]

    def row_states(self, rows: Sequence[int] | np.ndarray) -> dict[str, np.ndarray]:
        """Copies of envs `rows`' state arrays (one game each, mid-play): `set_row_states` puts such a game
        back into any row, which then plays on exactly as the game would have (its random streams included)."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        return {k.lstrip("_"): getattr(self, k)[rows] for k in self.STATE_ARRAYS}

    def set_row_states(self, rows: Sequence[int] | np.ndarray, state: dict[str, np.ndarray]) -> np.ndarray:
        """Put games saved by `row_states` into envs `rows`; returns every env's observation."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        for k in self.STATE_ARRAYS:
            getattr(self, k)[rows] = state[k.lstrip("_")]
        return self._obs.copy()

    def step(self, actions) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        acts = np.asarray(actions)
        if acts.shape != (self.n_envs,):
            raise BadInput("actions", f"need shape ({self.n_envs},), got {acts.shape}")
        acts = acts.astype(np.int64, copy=False)
        cap = -1 if self.max_steps is None else self.max_steps
        self._K.step_kernel(
            self._p, self._F, self._I, self._bricks, self._rng, self._mt, acts, self._obs, self._rew, self._term, cap
        )
        if self.max_steps is None:
            truncated = np.zeros(self.n_envs, dtype=np.bool_)
        else:
            truncated = (self._I[:, self._K.STEPS] >= self.max_steps) & ~self._term
        return self._obs.copy(), self._rew.copy(), self._term.copy(), truncated, {}

    # --- read-only views of the state (for evaluators, traces and tests)
    @property
    def score(self) -> np.ndarray:
        return self._I[:, self._K.SCORE].copy()

    @property
    def lives(self) -> np.ndarray:
        return self._I[:, self._K.LIVES].copy()

    @property
    def steps(self) -> np.ndarray:
        return self._I[:, self._K.STEPS].copy()

    @property
    def unmodelled(self) -> np.ndarray:
        """The ROM model's UNMODELLED bits per env (`rom.kernel`: a game variation other than ALE's
        default, the 65,536-frame attract switch); nonzero means the env may have left ALE's game."""
        self._need(_Rom, "unmodelled")
        return self._I[:, rom_kernel.FLAGS].copy()

    def state_bytes(self) -> bytes:
        """Every state array's bytes, for determinism checks."""
        return b"".join(a.tobytes() for a in (self._F, self._I, self._bricks, self._rng, self._mt))

    @property
    def walls(self) -> np.ndarray:
        """Every env's live-brick flags, (N, brick_rows * brick_cols) uint8, top row first (a copy): the
        wall a network policy sees, in the layout of `rom.kernel.brick_flags` on ALE's RAM."""
        return self._model.walls(self._I, self._bricks).reshape(self.n_envs, -1)

    def feature_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(low, high) float32 (9,): bounds every observation of this batch's model and parameters satisfies."""
        return self._model.bounds()

    def ram(self, i: int = 0) -> np.ndarray:
        """Env i's 128 RAM bytes (uint8, as ALE's `getRAM`); only the ROM model has them."""
        self._need(_Rom, "ram")
        return self._I[i, :RAM_N].astype(np.uint8)

    def _need(self, model: type, what: str) -> None:
        if not isinstance(self._model, model):
            need = "rom" if model is _Rom else "physics"
            raise BadInput(
                "preset", f"{what} needs a {need}-model preset; {self.params.name!r} is {self.params.model!r}"
            )

    def place_ball(self, i: int, x: float, y: float, vx: float, vy: float) -> None:
        """Put env i's ball in play at (x, y) with velocity (vx, vy) px/frame (trace replay from a given serve)."""
        self._need(_Physics, "place_ball")
        (
            self._F[i, physics_kernel.BX],
            self._F[i, physics_kernel.BY],
            self._F[i, physics_kernel.BVX],
            self._F[i, physics_kernel.BVY],
        ) = x, y, vx, vy
        self._I[i, physics_kernel.IN_PLAY] = 1
        self._I[i, physics_kernel.LEVEL] = 0
        self._I[i, physics_kernel.HITS] = 0

    def set_bricks(self, i: int, live: np.ndarray) -> None:
        """Overwrite env i's wall with `live` flags (brick_rows, brick_cols), top row first (trace replay)."""
        self._need(_Physics, "set_bricks")
        flat = np.asarray(live, dtype=np.uint8).reshape(-1)
        self._bricks[i, : flat.size] = flat
        self._I[i, physics_kernel.LEFT] = int(flat.sum())

    def positions(self, i: int) -> tuple[float, float, float, bool]:
        """(ball x, ball y, paddle x, in play) of env i right now, unrounded."""
        return self._model.positions(self._F[i], self._I[i])

    def bricks(self, i: int) -> np.ndarray:
        """Live flags of env i, shape (brick_rows, brick_cols), top row first."""
        return self._model.walls(self._I[i : i + 1], self._bricks[i : i + 1])[0]

    def render(self, i: int = 0) -> np.ndarray:
        """Env i as a (210, 160, 3) uint8 frame in ALE's look (the ROM model: ALE's screen itself)."""
        return self._model.render(self._F[i], self._I[i], self._bricks[i])


class ShadowBreakoutEnv(gym.Env):
    """Single-env Gymnasium wrapper: obs = the 9 contract features (float32), Discrete(4) actions.

    `net_obs` (a `NetObsSpec`, or its dict): the observation is instead what a network file with that spec
    sees (`net_obs.NetObserver`: scaled feature history, then the wall), the same vector the episode runner
    and the learner give it. The declared bounds hold for every state (`bounds` of the model)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 15}

    def __init__(
        self,
        preset: BreakoutParams | str = DEFAULT_PRESET,
        render_mode: str | None = None,
        max_steps: int | None = 1800,
        net_obs: NetObsSpec | dict | None = None,
    ):
        self.render_mode = render_mode
        self._batch = ShadowBreakout(1, preset, seeds=[0], max_steps=max_steps)
        low, high = self._batch.feature_bounds()
        self._net = None
        if net_obs is not None:
            spec = net_obs if isinstance(net_obs, NetObsSpec) else NetObsSpec(**net_obs)
            self._net = NetObserver(spec, 1)
            low = np.concatenate(
                [np.tile(low * FEATURE_SCALE, spec.history), np.zeros(spec.dim - spec.history * N_FEATURES)]
            )
            high = np.concatenate(
                [np.tile(high * FEATURE_SCALE, spec.history), np.ones(spec.dim - spec.history * N_FEATURES)]
            )
        self.observation_space = gym.spaces.Box(low.astype(np.float32), high.astype(np.float32), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(4)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        s = int(seed) if seed is not None else int(self.np_random.integers(0, 2**31 - 1))
        obs = self._batch.reset([s])
        if self._net is not None:
            obs = self._net.reset(obs, self._batch.walls)
        return obs[0], {"seed": s}

    def step(self, action):
        obs, rew, term, trunc, _ = self._batch.step(np.array([int(action)]))
        if self._net is not None:
            obs = self._net.observe(obs, self._batch.walls)
        return obs[0], float(rew[0]), bool(term[0]), bool(trunc[0]), {}

    def render(self):
        return self._batch.render(0)


def _register() -> None:
    if GYM_ID not in gym.registry:
        gym.register(id=GYM_ID, entry_point="policylab.envs.breakout.shadow:ShadowBreakoutEnv")


_register()
