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
from policylab.envs.breakout.rom.render import GRAY, rom_bytes
from policylab.errors import BadInput

ACTION_MEANINGS = ("NOOP", "FIRE", "RIGHT", "LEFT")


class BreakoutVectorEnv(VectorEnv):
    """N Breakout games with ale-py `AtariVectorEnv`'s preprocessing: `frameskip` frames per step, the max of the
    last two frames' grayscale screens (`maxpool`), resized to `img_height` x `img_width` with OpenCV's
    INTER_AREA, the last `stack_num` stacked; FIRE (`use_fire_reset`) then noops (up to `noop_max`, ale-py's
    stream) at every reset; rewards clipped to their sign (`reward_clipping`); truncation after
    `max_num_frames_per_episode` frames. Observations (N, stack_num, H, W) uint8, rewards int32.

    Equal to ale-py, byte for byte, for the same seeds: observations, rewards, terminations, truncations and
    info, with or without noop starts (tests/envs/breakout/test_vector.py).

    What ale-py offers and this does not: `grayscale=False`, `episodic_life`, `life_loss_info`, sticky actions
    (`repeat_action_probability` > 0), `full_action_space`, `continuous`, batched async stepping
    (`batch_size`), frameskip 1 with max-pooling: each a `BadInput` naming it. `num_threads` and `thread_affinity_offset` are accepted and
    ignored (the kernel is one thread; run several envs on threads: it releases the GIL)."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int = 1, *, game: str = "breakout", batch_size: int = 0, num_threads: int = 0,
                 thread_affinity_offset: int = -1, max_num_frames_per_episode: int = 108000,
                 repeat_action_probability: float = 0.0, full_action_space: bool = False,
                 continuous: bool = False, continuous_action_threshold: float = 0.5,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP, img_height: int = 84,
                 img_width: int = 84, grayscale: bool = True, stack_num: int = 4, frameskip: int = 4,
                 maxpool: bool = True, noop_max: int = 30, episodic_life: bool = False,
                 life_loss_info: bool = False, reward_clipping: bool = True, use_fire_reset: bool = True):
        del num_threads, thread_affinity_offset, continuous_action_threshold  # one thread; no continuous actions
        unsupported = {"game": game != "breakout", "batch_size": batch_size not in (0, num_envs),
                       "repeat_action_probability": repeat_action_probability != 0.0,
                       "full_action_space": full_action_space, "continuous": continuous,
                       "grayscale": not grayscale, "episodic_life": episodic_life, "life_loss_info": life_loss_info,
                       "autoreset_mode": AutoresetMode(autoreset_mode) != AutoresetMode.NEXT_STEP}
        for name, bad in unsupported.items():
            if bad:
                raise BadInput(name, "not supported by the Breakout vector env (see BreakoutVectorEnv's docstring)")
        if type(num_envs) is not int or num_envs <= 0:
            raise BadInput("num_envs", "must be a positive integer")
        if type(frameskip) is not int or frameskip <= 0:
            raise BadInput("frameskip", "must be a positive integer")
        if frameskip == 1 and maxpool:  # ale-py pools a frame it keeps from elsewhere, not modelled
            raise BadInput("frameskip", "1 with maxpool=True is not supported (pass maxpool=False)")
        if not (0 < img_height < VK.SRC_H and 0 < img_width < VK.SRC_W):
            raise BadInput("img_height", f"the resize only shrinks: need 0 < img_height < {VK.SRC_H} and "
                                         f"0 < img_width < {VK.SRC_W}")
        if stack_num <= 0 or noop_max < 0 or max_num_frames_per_episode < 0:
            raise BadInput("stack_num", "stack_num must be positive, noop_max and max_num_frames_per_episode >= 0")
        self.num_envs = num_envs
        self.frameskip, self.max_frames = frameskip, int(max_num_frames_per_episode)
        self.noop_max, self.fire_reset = int(noop_max), bool(use_fire_reset)
        self.maxpool, self.clip = int(bool(maxpool)), bool(reward_clipping)  # the kernel pools with `maxpool` frames
        self.autoreset_mode = AutoresetMode.NEXT_STEP
        self.single_observation_space = Box(0, 255, (stack_num, img_height, img_width), np.uint8)
        self.single_action_space = Discrete(len(ACTION_MEANINGS))
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._tables = (rom_bytes().astype(np.int64), GRAY[np.arange(256) >> 1],  # TIA colour byte -> gray (low bit ignored)
                        *VK.resize_tables(img_height, img_width))
        self._pixels = VK.pixel_tables(self._tables[2], self._tables[4], img_height, img_width)
        n = num_envs
        self._I = np.zeros((n, EK.NI), dtype=np.int64)
        self._pairs = np.zeros((n, 2, EK.NI), dtype=np.int64)
        self._C = np.zeros((n, VK.NC), dtype=np.int64)
        self._mt = np.zeros((n, R.ROW), dtype=np.uint32)
        self._obs = np.zeros((n, *self.single_observation_space.shape), dtype=np.uint8)
        self._reset_done = False

    def get_action_meanings(self) -> list[str]:
        return list(ACTION_MEANINGS)

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
        if seed is None:  # fresh entropy, as ale-py's seed -1
            seeds = np.random.SeedSequence().generate_state(rows.size, dtype=np.uint32).astype(np.int64)
        elif isinstance(seed, (int, np.integer)):
            seeds = np.arange(int(seed), int(seed) + rows.size, dtype=np.int64)
        else:
            seeds = np.asarray(seed, dtype=np.int64)
            if seeds.shape != rows.shape:
                raise BadInput("seed", f"need one seed per env being reset ({rows.size}), got shape {seeds.shape}")
        if (seeds < 0).any():
            raise BadInput("seed", "seeds must be non-negative")
        obs = self._obs.copy()
        lives, frames, ep_frames = (np.zeros(self.num_envs, dtype=np.int32) for _ in range(3))
        VK.reset_kernel(rows.astype(np.int64), seeds, self._I, self._pairs, self._C, self._mt, self.noop_max,
                        self.fire_reset, self.maxpool, *self._tables, obs, lives, frames, ep_frames)
        self._obs = obs
        self._reset_done = True
        return obs, self._info(lives, frames, ep_frames)

    def step(self, actions) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        acts = np.asarray(actions)
        if acts.shape != (self.num_envs,) or acts.dtype.kind not in "iu" or ((acts < 0) | (acts > 3)).any():
            raise BadInput("actions", f"need {self.num_envs} integer actions in 0-3, got {acts.dtype} {acts.shape}")
        if not self._reset_done:
            raise BadInput("reset", "call reset() before step()")
        n = self.num_envs
        obs = np.empty_like(self._obs)
        obs[:, :-1] = self._obs[:, 1:]  # the stack shifted; the kernel updates the newest frame in place
        obs[:, -1] = self._obs[:, -1]
        reward = np.zeros(n, dtype=np.int32)
        terminated, truncated = np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_)
        lives, frames, ep_frames = (np.zeros(n, dtype=np.int32) for _ in range(3))
        VK.step_kernel(acts.astype(np.int64, copy=False), self._I, self._pairs, self._C, self._mt, self.frameskip,
                       self.max_frames, self.noop_max, self.fire_reset, self.maxpool, self.clip, *self._tables,
                       VK.STATIC_BYTES, *self._pixels, obs, reward, terminated, truncated, lives, frames, ep_frames)
        self._obs = obs
        return obs, reward, terminated, truncated, self._info(lives, frames, ep_frames)
