"""`BreakoutVectorEnv`: ale-py's `AtariVectorEnv` for Breakout, on the exact shadow, in one compiled call.

Why: Atari training code (CleanRL's envpool/ALE-vector scripts, anything built on
`gymnasium.make_vec("ALE/Breakout-v5", ...)`) takes a vector env of preprocessed, frame-stacked
observations. This one has ale-py's constructor keywords, defaults, spaces, `info` keys and NextStep
autoreset, and for the same seeds returns the same bytes (tests/envs/breakout/test_vector.py steps both
side by side); all N games are stepped, max-pooled, resized and stacked by `vector_kernel` in one numba call
that releases the GIL.

Made by `gymnasium.make_vec("policylab/Breakout-v5", num_envs=N, vectorization_mode="vector_entry_point")`
(registered on `import policylab`), or directly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.spaces import Box, Discrete
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from policylab.envs.breakout import ale_random as R
from policylab.envs.breakout import vector_kernel as VK
from policylab.envs.breakout.rom import kernel as EK
from policylab.envs.breakout.rom.ale_interface import (ACTION_NAMES, JOYSTICK, LEGAL_ACTIONS, MINIMAL_ACTIONS,
                                                       paddle_step)
from policylab.envs.breakout.rom.render import GRAY, PALETTE, rom_bytes
from policylab.errors import BadInput

class BreakoutVectorEnv(VectorEnv):
    """N Breakout games with ale-py `AtariVectorEnv`'s preprocessing: `frameskip` frames per step, each sticky
    with `repeat_action_probability` (ALE's stream of each env's seed), the max of the last two frames' screens
    (`maxpool`), grayscale or RGB (`grayscale`), resized to `img_height` x `img_width` with OpenCV's INTER_AREA,
    the last `stack_num` stacked; FIRE (`use_fire_reset`) then noops (up to `noop_max`, ale-py's stream) at every
    reset; rewards clipped to their sign (`reward_clipping`); a lost life terminates a step with
    `life_loss_info` (the game goes on) or `episodic_life` (the game is reset); truncation after
    `max_num_frames_per_episode` frames of agent steps (the reset's are not counted); the minimal (4), full (18, `full_action_space`) or continuous
    (`continuous`: radius, angle, fire, as ale-py maps them) actions. Observations (N, stack_num, H, W) uint8,
    (N, stack_num, H, W, 3) in RGB; rewards int32.

    Equal to ale-py, byte for byte, for the same seeds: observations, rewards, terminations, truncations and
    info (tests/envs/breakout/test_vector.py).

    What ale-py offers and this does not: batched async stepping (`batch_size` other than N), the
    SameStep/Disabled autoreset modes, other games: each a `BadInput` naming it. `num_threads` and
    `thread_affinity_offset` are accepted and ignored (the kernel is one thread; run several envs on threads:
    it releases the GIL)."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int = 1, *, game: str = "breakout", batch_size: int = 0, num_threads: int = 0,
                 thread_affinity_offset: int = -1, max_num_frames_per_episode: int = 108000,
                 repeat_action_probability: float = 0.0, full_action_space: bool = False,
                 continuous: bool = False, continuous_action_threshold: float = 0.5,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP, img_height: int = 84,
                 img_width: int = 84, grayscale: bool = True, stack_num: int = 4, frameskip: int = 4,
                 maxpool: bool = True, noop_max: int = 30, episodic_life: bool = False,
                 life_loss_info: bool = False, reward_clipping: bool = True, use_fire_reset: bool = True):
        del num_threads, thread_affinity_offset  # one thread
        unsupported = {"game": game != "breakout", "batch_size": batch_size not in (0, num_envs),
                       "autoreset_mode": AutoresetMode(autoreset_mode) != AutoresetMode.NEXT_STEP}
        for name, bad in unsupported.items():
            if bad:
                raise BadInput(name, "not supported by the Breakout vector env (see BreakoutVectorEnv's docstring)")
        if type(num_envs) is not int or num_envs <= 0:
            raise BadInput("num_envs", "must be a positive integer")
        if type(frameskip) is not int or frameskip <= 0:
            raise BadInput("frameskip", "must be a positive integer")
        if not 0.0 <= float(repeat_action_probability) <= 1.0:
            raise BadInput("repeat_action_probability", f"must be in [0, 1], got {repeat_action_probability!r}")
        if not (0 < img_height < VK.SRC_H and 0 < img_width < VK.SRC_W):
            raise BadInput("img_height", f"the resize only shrinks: need 0 < img_height < {VK.SRC_H} and "
                                         f"0 < img_width < {VK.SRC_W}")
        if stack_num <= 0 or noop_max < 0 or max_num_frames_per_episode < 0:
            raise BadInput("stack_num", "stack_num must be positive, noop_max and max_num_frames_per_episode >= 0")
        self.num_envs = num_envs
        self.frameskip, self.max_frames = frameskip, int(max_num_frames_per_episode)
        self.noop_max, self.fire_reset = int(noop_max), bool(use_fire_reset)
        # the kernel pools with `maxpool` frames; at frameskip 1 ale-py's pool reads a slot no frame fills (it
        # equals maxpool=False on every step: tests/envs/breakout/test_vector.py)
        self.maxpool, self.clip = int(bool(maxpool) and frameskip > 1), bool(reward_clipping)
        self.sticky = float(repeat_action_probability)
        self.life_mode = (VK.EPISODIC_LIFE if episodic_life else VK.LIFE_LOSS_INFO if life_loss_info
                          else VK.LIVES_IGNORED)
        self.continuous, self.continuous_action_threshold = bool(continuous), float(continuous_action_threshold)
        self.grayscale = bool(grayscale)
        self.autoreset_mode = AutoresetMode.NEXT_STEP
        shape = (stack_num, img_height, img_width) + (() if grayscale else (3,))
        self.single_observation_space = Box(0, 255, shape, np.uint8)
        self._action_set = LEGAL_ACTIONS if full_action_space or continuous else MINIMAL_ACTIONS
        if self.continuous:  # radius, angle, fire
            self.single_action_space = Box(low=np.array([0.0, -np.pi, 0.0], dtype=np.float32),
                                           high=np.array([1.0, np.pi, 1.0], dtype=np.float32), dtype=np.float32)
        else:
            self.single_action_space = Discrete(len(self._action_set))
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        colours = np.arange(256) >> 1  # TIA colour byte -> palette entry (the low bit is ignored)
        pal = GRAY[colours][None] if grayscale else PALETTE[colours].T  # (channels, 256)
        self._tables = (rom_bytes().astype(np.int64), np.ascontiguousarray(pal),
                        *VK.resize_tables(img_height, img_width))
        self._pixels = VK.pixel_tables(self._tables[2], self._tables[4], img_height, img_width)
        n = num_envs
        self._I = np.zeros((n, EK.NI), dtype=np.int64)
        self._pairs = np.zeros((n, 2, EK.NI), dtype=np.int64)
        self._C = np.zeros((n, VK.NC), dtype=np.int64)
        self._mt = np.zeros((n, R.ROW), dtype=np.uint32)
        self._smt, self._sbuf = R.new_state(n)
        # as ale-py's envs, built with seed -1: each env's noop and sticky streams from fresh entropy, until a seed
        words = np.random.SeedSequence().generate_state(2 * n, dtype=np.uint32).astype(np.int64)
        R.seed_all(self._mt, np.zeros(n, dtype=np.uint64), words[:n])
        R.seed_all(self._smt, self._sbuf, words[n:])
        self._obs = np.zeros((n, stack_num, img_height, img_width, pal.shape[0]), dtype=np.uint8)
        self._still = np.zeros((n, VK.SRC_H, VK.SRC_W), dtype=np.uint8)  # each game's still layer (`vector_kernel`)
        self._memo = VK.new_memo(pal.shape[0], img_height, img_width)  # reset observations (`vector_kernel`)
        self._reset_done = False

    def _public(self, obs: np.ndarray) -> np.ndarray:
        """The kernel's (N, stack, H, W, channels) observation in ale-py's shape (no channel axis in grayscale)."""
        return obs[..., 0] if self.grayscale else obs

    def get_action_meanings(self) -> list[str]:
        return [ACTION_NAMES[a] for a in self._action_set]

    def _info(self, lives, frames, ep_frames) -> dict[str, np.ndarray]:
        return {"env_id": np.arange(self.num_envs, dtype=np.int32), "lives": lives, "frame_number": frames,
                "episode_frame_number": ep_frames}

    def reset(self, *, seed: int | np.ndarray | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """As ale-py: an int seeds the envs being reset with seed, seed + 1, ...; an array gives one seed each;
        `options={"reset_mask": bool array}` resets only those envs (after a first full reset)."""
        rows = np.arange(self.num_envs)
        if options is not None and "reset_mask" in options:
            mask = options["reset_mask"]
            if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_ or mask.shape != (self.num_envs,):
                raise BadInput("reset_mask", f"must be a bool array of shape ({self.num_envs},)")
            if not self._reset_done:
                raise BadInput("reset_mask", "a partial reset needs a full reset first")
            rows = np.flatnonzero(mask)
        if seed is None:  # ale-py's seed -1: each env's streams go on (from fresh entropy before any seed)
            seeds = np.full(rows.size, -1, dtype=np.int64)
        elif isinstance(seed, (int, np.integer)):
            seeds = np.arange(int(seed), int(seed) + rows.size, dtype=np.int64)
        else:
            seeds = np.asarray(seed, dtype=np.int64)
            if seeds.shape != rows.shape:
                raise BadInput("seed", f"need one seed per env being reset ({rows.size}), got shape {seeds.shape}")
        if seed is not None and (seeds < 0).any():
            raise BadInput("seed", "seeds must be non-negative")
        obs = self._obs.copy()
        lives, frames, ep_frames = (np.zeros(self.num_envs, dtype=np.int32) for _ in range(3))
        VK.reset_kernel(rows.astype(np.int64), seeds, self._I, self._pairs, self._C, self._mt, self._smt, self._sbuf,
                        self.sticky, self.noop_max, self.fire_reset, self.maxpool, *self._tables, self._still,
                        *self._memo, obs, lives, frames, ep_frames)
        self._obs = obs
        self._reset_done = True
        return self._public(obs), self._info(lives, frames, ep_frames)

    def step(self, actions) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        ids, steps = self._ale_actions(actions)
        if not self._reset_done:
            raise BadInput("reset", "call reset() before step()")
        n = self.num_envs
        obs = np.empty_like(self._obs)
        obs[:, :-1] = self._obs[:, 1:]  # the stack shifted; the kernel updates the newest frame in place
        obs[:, -1] = self._obs[:, -1]
        reward = np.zeros(n, dtype=np.int32)
        terminated, truncated = np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_)
        lives, frames, ep_frames = (np.zeros(n, dtype=np.int32) for _ in range(3))
        VK.step_kernel(ids, steps, self._I, self._pairs, self._C, self._mt, self._smt, self._sbuf, self.sticky,
                       self.frameskip, self.max_frames, self.noop_max, self.fire_reset, self.maxpool, self.clip,
                       self.life_mode, *self._tables, VK.STATIC_BYTES, *self._pixels, self._still, *self._memo, obs,
                       reward, terminated, truncated, lives, frames, ep_frames)
        self._obs = obs
        return self._public(obs), reward, terminated, truncated, self._info(lives, frames, ep_frames)

    def _ale_actions(self, actions) -> tuple[np.ndarray, np.ndarray]:
        """ALE's action numbers and paddle resistance steps for the agent's actions. Continuous actions as ale-py
        maps them: the stick's x = r cos theta and y = r sin theta past the threshold one way or the other, and
        fire past it, name the action; the radius is the paddle strength."""
        acts = np.asarray(actions)
        n = self.num_envs
        if self.continuous:
            if acts.shape != (n, 3) or acts.dtype != np.float32:
                raise BadInput("actions", f"need float32 actions of shape ({n}, 3), got {acts.dtype} {acts.shape}")
            t = self.continuous_action_threshold
            x, y = acts[:, 0] * np.cos(acts[:, 1]), acts[:, 0] * np.sin(acts[:, 1])
            h, v = (x > t).astype(np.int64) - (x < -t), (y > t).astype(np.int64) - (y < -t)
            ids = JOYSTICK[h + 1, v + 1, (acts[:, 2] > t).astype(np.int64)]
            steps = np.array([paddle_step(r) for r in acts[:, 0]], dtype=np.int64)
            return ids, steps
        k = len(self._action_set)
        if acts.shape != (n,) or acts.dtype.kind not in "iu" or ((acts < 0) | (acts >= k)).any():
            raise BadInput("actions", f"need {n} integer actions in 0-{k - 1}, got {acts.dtype} {acts.shape}")
        return self._action_set[acts], np.full(n, EK.PADDLE_DELTA, dtype=np.int64)
