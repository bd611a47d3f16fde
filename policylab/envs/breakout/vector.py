"""`BreakoutVectorEnv`: ale-py's `AtariVectorEnv` for Breakout on the exact shadow, stepped in one compiled call.

docs/breakout.md, "Vector env: ale-py's `AtariVectorEnv`, on the exact model"."""

from __future__ import annotations

import sys
from collections import deque
from typing import Any

import numpy as np
from gymnasium.spaces import Box, Discrete
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from policylab.envs.breakout import ale_random, vector_kernel
from policylab.envs.breakout.ale_errors import GymError
from policylab.envs.breakout.compile_notice import first_call
from policylab.envs.breakout.rom import kernel as rom_kernel
from policylab.envs.breakout.rom.ale_interface import (
    ACTION_NAMES,
    JOYSTICK,
    LEGAL_ACTIONS,
    MINIMAL_ACTIONS,
    paddle_step,
)
from policylab.envs.breakout.rom.render import GRAY, PALETTE
from policylab.errors import BadInput

# the stacks handed out that the env keeps an eye on, to reuse one the caller let go of (`_new_stacks`)
HANDED_KEPT = 3
# the least length of the tuples of stacks the kernels get (`_padded`)
KERNEL_STACKS = 4


def _references(items: list, k: int) -> int:
    """CPython's reference count of `items[k]` as this function sees it (the count's own references vary with the
    calling code, so it is compared only with `ALONE`, counted here too)."""
    return sys.getrefcount(items[k])


ALONE = _references([object()], 0)  # what `_references` says of an object that only its list refers to


class BreakoutVectorEnv(VectorEnv):
    """N Breakout games with ale-py `AtariVectorEnv`'s preprocessing: `frameskip` frames per step, each sticky
    with `repeat_action_probability` (ALE's stream of each env's seed), the max of the last two frames' screens
    (`maxpool`), grayscale or RGB (`grayscale`), resized to `img_height` x `img_width` with OpenCV's INTER_AREA,
    the last `stack_num` stacked; FIRE (`use_fire_reset`) then noops (up to `noop_max`, ale-py's stream) at every
    reset; rewards clipped to their sign (`reward_clipping`); a lost life terminates a step with
    `life_loss_info` (the game goes on) or `episodic_life` (the game is reset); truncation after
    `max_num_frames_per_episode` frames of agent steps (the reset's are not counted); the minimal (4), full (18,
    `full_action_space`) or continuous (`continuous`: radius, angle, fire, as ale-py maps them) actions.
    Observations (B, stack_num, H, W) uint8, (B, stack_num, H, W, 3) in RGB; rewards int32; B is `batch_size`
    (`num_envs` when 0).

    `autoreset_mode`: NextStep (ale-py's default: the step after an episode's end resets it and ignores its
    action), SameStep (ale-py's: the ending step resets at once and returns the reset's observation, with the
    episode's last one in `info["final_obs"]`, present when a row of the batch is terminated or truncated;
    rows whose episode did not end hold zeros there) and Disabled (not in ale-py 0.12: nothing resets by itself;
    `reset(options={"reset_mask": ...})` resets ended envs, and stepping one before is refused).

    Equal to ale-py, byte for byte, for the same seeds: observations, rewards, terminations, truncations and
    info (tests/envs/breakout/test_vector.py, test_vector_async.py).

    What ale-py offers and this does not: other games and `xla()` (each a `GymError` naming it).
    `num_threads` and `thread_affinity_offset` are accepted and change nothing: the kernel is one thread, which
    releases the GIL (several envs can be stepped from threads of their own)."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int = 1,
        *,
        game: str = "breakout",
        batch_size: int = 0,
        num_threads: int = 0,
        thread_affinity_offset: int = -1,
        max_num_frames_per_episode: int = 108000,
        repeat_action_probability: float = 0.0,
        full_action_space: bool = False,
        continuous: bool = False,
        continuous_action_threshold: float = 0.5,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        img_height: int = 84,
        img_width: int = 84,
        grayscale: bool = True,
        stack_num: int = 4,
        frameskip: int = 4,
        maxpool: bool = True,
        noop_max: int = 30,
        episodic_life: bool = False,
        life_loss_info: bool = False,
        reward_clipping: bool = True,
        use_fire_reset: bool = True,
    ):
        del num_threads, thread_affinity_offset  # one thread (see the class docstring)
        if game != "breakout":
            raise GymError("game", f"the Breakout vector env plays breakout only, got {game!r}")
        if type(frameskip) is not int or frameskip <= 0:  # ale-py's checks, with its exception type
            raise GymError("frameskip", f"must be a positive int, got {frameskip!r}")
        if type(num_envs) is not int or num_envs <= 0:
            raise BadInput("num_envs", "must be a positive integer")
        if type(batch_size) is not int or not 0 <= batch_size <= num_envs:
            raise BadInput("batch_size", f"0 (all envs) or 1..num_envs ({num_envs}), got {batch_size!r}")
        try:
            mode = AutoresetMode(autoreset_mode)
        except ValueError:
            raise BadInput("autoreset_mode", f"NextStep, SameStep or Disabled, got {autoreset_mode!r}") from None
        if not 0.0 <= float(repeat_action_probability) <= 1.0:
            raise BadInput("repeat_action_probability", f"must be in [0, 1], got {repeat_action_probability!r}")
        if not (0 < img_height < vector_kernel.SRC_H and 0 < img_width < vector_kernel.SRC_W):
            raise BadInput(
                "img_height",
                f"the resize only shrinks: need 0 < img_height < {vector_kernel.SRC_H} and 0 < img_width < {vector_kernel.SRC_W}",
            )
        if stack_num <= 0 or noop_max < 0:
            raise BadInput("stack_num", "stack_num must be positive and noop_max >= 0")
        if max_num_frames_per_episode <= 0:
            raise BadInput("max_num_frames_per_episode", "must be positive (ale-py's 0 truncates every step)")
        self.num_envs = num_envs
        self.batch_size = batch_size or num_envs
        # the kernels' settings, in the types they are compiled for
        self._cfg = vector_kernel.Config(
            sticky=float(repeat_action_probability),
            frameskip=frameskip,
            max_frames=int(max_num_frames_per_episode),
            noop_max=int(noop_max),
            fire_reset=bool(use_fire_reset),
            # the kernel pools with `maxpool` frames; at frameskip 1 ale-py's pool reads a slot no frame fills (it
            # equals maxpool=False on every step: tests/envs/breakout/test_vector.py)
            maxpool=int(bool(maxpool) and frameskip > 1),
            clip=bool(reward_clipping),
            life_mode=vector_kernel.EPISODIC_LIFE
            if episodic_life
            else vector_kernel.LIFE_LOSS_INFO
            if life_loss_info
            else vector_kernel.LIVES_IGNORED,
            same_step=mode == AutoresetMode.SAME_STEP,
        )
        self.continuous, self.continuous_action_threshold = bool(continuous), float(continuous_action_threshold)
        self.grayscale = bool(grayscale)
        self.autoreset_mode = mode
        self.metadata = {**self.metadata, "autoreset_mode": mode}
        shape = (stack_num, img_height, img_width) + (() if grayscale else (3,))
        self.single_observation_space = Box(0, 255, shape, np.uint8)
        self._action_set = LEGAL_ACTIONS if full_action_space or continuous else MINIMAL_ACTIONS
        self.map_action_idx = JOYSTICK.astype(np.int32)  # ale-py's table: [h + 1, v + 1, fire] -> ALE action
        if self.continuous:  # radius, angle, fire
            self.single_action_space = Box(
                low=np.array([0.0, -np.pi, 0.0], dtype=np.float32),
                high=np.array([1.0, np.pi, 1.0], dtype=np.float32),
                dtype=np.float32,
            )
        else:
            self.single_action_space = Discrete(len(self._action_set))
        self.observation_space = batch_space(self.single_observation_space, self.batch_size)
        self.action_space = batch_space(self.single_action_space, self.batch_size)
        colours = np.arange(256) >> 1  # TIA colour byte -> palette entry (the low bit is ignored)
        pal = GRAY[colours][None] if grayscale else PALETTE[colours].T  # (channels, 256)
        self._screen = vector_kernel.screen_tables(pal, img_height, img_width)
        n = num_envs
        self._rows = np.arange(n, dtype=np.int64)  # every env, for the kernels
        noop_mt = np.zeros((n, ale_random.ROW), dtype=np.uint32)
        sticky_mt, sticky_buf = ale_random.new_state(n)
        # as ale-py's envs, built with seed -1: each env's noop and sticky streams from fresh entropy, until a seed
        words = np.random.SeedSequence().generate_state(2 * n, dtype=np.uint32).astype(np.int64)
        ale_random.seed_all(noop_mt, np.zeros(n, dtype=np.uint64), words[:n])
        ale_random.seed_all(sticky_mt, sticky_buf, words[n:])
        # per env, as ale-py's `PreprocessedEnv`: the game, the pending seed (-1: none), the action last sent (ALE's
        # number) and its paddle step
        self._games = vector_kernel.Games(
            state=np.zeros((n, rom_kernel.NI), dtype=np.int64),
            pairs=np.zeros((n, 2, rom_kernel.NI), dtype=np.int64),
            counters=np.zeros((n, vector_kernel.NC), dtype=np.int64),
            noop_mt=noop_mt,
            sticky_mt=sticky_mt,
            sticky_buf=sticky_buf,
            still=np.zeros((n, vector_kernel.SRC_H, vector_kernel.SRC_W), dtype=np.uint8),
            seeds=np.full(n, -1, dtype=np.int64),
            actions=np.zeros(n, dtype=np.int64),
            paddle_steps=np.full(n, rom_kernel.PADDLE_DELTA, dtype=np.int64),
            heads=np.full(n, stack_num - 1, dtype=np.int64),
            band=np.full(n, -1, dtype=np.int64),
            frame=np.zeros((n, img_height, img_width, pal.shape[0]), dtype=np.uint8),
        )
        # and each env's last result: its stacks, stepped in place, and the last step's outcome and info
        obs = np.zeros((n, stack_num, img_height, img_width, pal.shape[0]), dtype=np.uint8)
        self._out = vector_kernel.Results(
            obs=obs,
            final_obs=np.zeros_like(obs) if mode == AutoresetMode.SAME_STEP else obs[:0],
            reward=np.zeros(n, dtype=np.int32),
            terminated=np.zeros(n, dtype=np.bool_),
            truncated=np.zeros(n, dtype=np.bool_),
            lives=np.zeros(n, dtype=np.int32),
            frame_number=np.zeros(n, dtype=np.int32),
            episode_frame_number=np.zeros(n, dtype=np.int32),
        )
        self._work = vector_kernel.step_scratch(n, img_height, img_width)
        self._memo = vector_kernel.new_memo(self._screen, pal.shape[0])  # what the kernels draw once (`Memo`)
        self._args = vector_kernel.plain(self._games, self._cfg, self._screen, self._memo, self._out, self._work)
        # the sync step's next stacks, their shared frames written (`vector_kernel.step_kernel`); None: not primed
        self._ahead: tuple[np.ndarray, ...] | None = None
        self._handed: list[np.ndarray] = []  # the last stacks handed out, to reuse once the caller lets go
        self._no_stacks = self._padded((obs[:0],) * stack_num)  # the tuple type of the sync step's `ahead`
        # async: (env, is a reset, its seed, its ALE action and paddle step), in ale-py's queue order
        self._queue: deque[tuple[int, bool, int, int, int]] = deque()
        self._last_ids: np.ndarray | None = None  # the envs of the last batch, which `send` acts for
        self._sent = False  # sync: actions sent and not yet received
        self.ale = VectorALE(self)

    @property
    def settings(self) -> vector_kernel.Config:
        """The env's settings as its kernels read them: ale-py's keywords after defaults and checks."""
        return self._cfg

    def _public(self, obs: np.ndarray) -> np.ndarray:
        """The kernel's (N, stack, H, W, channels) observation in ale-py's shape (no channel axis in grayscale)."""
        return obs[..., 0] if self.grayscale else obs

    def _handed_out(self) -> np.ndarray:
        """Every env's stack in ale-py's shape, from the env's own frames (each env's ring,
        `vector_kernel.Games.heads`) into a new array: the caller owns it, as ale-py's, and writing into it cannot
        reach the next step's stack."""
        out = np.empty(self._out.obs.shape, dtype=np.uint8)
        vector_kernel.stacks(self._rows, self._out.obs, self._games.heads, out)
        return self._public(out)

    def _new_stacks(self) -> np.ndarray:
        """An array for the sync step's stacks: one handed out before that nothing refers to any more but this env
        (the caller dropped it and every view of it, so nothing can see it rewritten), else a new one. A new array
        a step costs its pages: the kernel writes each array over several steps (`step_kernel`), so several are
        alive at once and the allocator hands their memory back and maps it again (4.7 against 2.8 us per env-step
        at N = 64 in one measurement). The caller's usual loop holds the last observation while it steps, so the
        one before it comes back."""
        for k in range(len(self._handed)):
            if _references(self._handed, k) == ALONE:
                return self._handed.pop(k)
        return np.empty(self._out.obs.shape, dtype=np.uint8)

    def get_action_meanings(self) -> list[str]:
        return [ACTION_NAMES[a] for a in self._action_set]

    def xla(self):
        raise GymError(
            "xla",
            "not offered: ale-py's XLA functions call its C++ vectorizer; this env is numba "
            "on the CPU (use it through jax's pure_callback, or ale-py's env)",
        )

    def _info(self, ids: np.ndarray | None) -> dict[str, np.ndarray]:
        """ale-py's info of the envs `ids` (None: all, in order)."""
        if ids is None:
            return {
                "env_id": np.arange(self.num_envs, dtype=np.int32),
                "lives": self._out.lives.copy(),
                "frame_number": self._out.frame_number.copy(),
                "episode_frame_number": self._out.episode_frame_number.copy(),
            }
        return {
            "env_id": ids.astype(np.int32),
            "lives": self._out.lives[ids],
            "frame_number": self._out.frame_number[ids],
            "episode_frame_number": self._out.episode_frame_number[ids],
        }

    def reset(
        self, *, seed: int | np.ndarray | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """As ale-py: an int seeds the envs being reset with seed, seed + 1, ...; an array gives one seed each;
        None keeps each env's streams; `options={"reset_mask": bool array}` resets only those envs (after a
        first full reset, and not in async batches)."""
        rows = np.arange(self.num_envs)
        if options is not None and "reset_mask" in options:
            mask = options["reset_mask"]
            if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_ or mask.shape != (self.num_envs,):
                raise BadInput("reset_mask", f"must be a bool array of shape ({self.num_envs},)")
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
        return self.ale.reset(rows, seeds)

    def step(self, actions) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """ale-py's: `send` then `recv`."""
        self.send(actions)
        return self.recv()

    def send(self, actions) -> None:
        """The actions of the envs of the last batch (`info["env_id"]`), in its order (ale-py's `send`)."""
        acts = np.asarray(actions)
        b = self.batch_size
        if self.continuous:
            if acts.shape != (b, 3) or acts.dtype != np.float32:
                raise BadInput("actions", f"need float32 actions of shape ({b}, 3), got {acts.dtype} {acts.shape}")
            t = self.continuous_action_threshold
            x, y = acts[:, 0] * np.cos(acts[:, 1]), acts[:, 0] * np.sin(acts[:, 1])
            h, v = (x > t).astype(np.int32) - (x < -t) + 1, (y > t).astype(np.int32) - (y < -t) + 1
            self.ale.send(self.map_action_idx[h, v, (acts[:, 2] > t).astype(np.int32)], acts[:, 0])
        else:
            if acts.shape != (b,) or acts.dtype.kind not in "iu":
                raise BadInput("actions", f"need {b} integer actions, got {acts.dtype} {acts.shape}")
            self.ale.send(acts, None)

    def recv(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """The next batch's observations, rewards, terminations, truncations and info (ale-py's `recv`)."""
        return self.ale.recv()

    # --- the machinery behind `ale` (ale-py's `ALEVectorInterface`)
    def _queue_actions(self, action_ids: np.ndarray, paddle_strengths: np.ndarray | None) -> None:
        if self._last_ids is None:
            raise BadInput("reset", "call reset() before step() or send()")
        ids = np.asarray(action_ids)
        k = len(self._action_set)
        if ids.shape != (self.batch_size,) or ids.dtype.kind not in "iu" or ((ids < 0) | (ids >= k)).any():
            raise BadInput("actions", f"need {self.batch_size} actions in 0-{k - 1}, got {ids.dtype} {ids.shape}")
        envs = self._last_ids
        if self.autoreset_mode == AutoresetMode.DISABLED and self._games.counters[envs, vector_kernel.DONE].any():
            ended = envs[self._games.counters[envs, vector_kernel.DONE] != 0].tolist()
            raise GymError(
                "actions",
                f"the episodes of envs {ended} have ended and autoreset_mode is Disabled: "
                "reset them (reset(options={'reset_mask': ...})) before stepping them",
            )
        acts = self._action_set[ids]
        if paddle_strengths is None:
            psteps = np.full(ids.shape, rom_kernel.PADDLE_DELTA, dtype=np.int64)
        else:
            psteps = np.array([paddle_step(r) for r in np.asarray(paddle_strengths, dtype=np.float32)], np.int64)
        if self.batch_size == self.num_envs:
            self._games.actions[envs], self._games.paddle_steps[envs] = acts, psteps
            self._sent = True
        else:  # ale-py sets every action on its env before queueing: an env twice in a batch plays its last one
            last = dict(zip(envs.tolist(), zip(acts.tolist(), psteps.tolist())))
            self._queue.extend((e, False, -1, *last[e]) for e in envs.tolist())

    def _reset_rows(self, rows: np.ndarray, seeds: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        partial = rows.size != self.num_envs
        if partial and self._last_ids is None:
            raise BadInput("reset_mask", "a partial reset needs a full reset first")
        if partial and self.batch_size != self.num_envs:
            raise BadInput("reset_mask", "a partial reset is not supported in async batches (batch_size < num_envs)")
        if self.batch_size != self.num_envs:
            self._queue.extend((int(e), True, int(s), 0, rom_kernel.PADDLE_DELTA) for e, s in zip(rows, seeds))
            obs, _, _, _, info = self._recv_async()
            return obs, info
        self._games.seeds[rows] = seeds
        self._reset_kernel(rows)
        self._out.reward[rows], self._out.terminated[rows], self._out.truncated[rows] = 0, False, False
        self._last_ids = np.arange(self.num_envs)
        self._sent = False
        return self._handed_out(), self._info(None)

    def _reset_kernel(self, rows: np.ndarray) -> None:
        self._ahead = None
        first_call(
            vector_kernel.reset_kernel,
            "the Breakout vector env's reset kernel",
            rows.astype(np.int64),
            *self._args,
        )

    def _step_kernel(
        self, rows: np.ndarray, out: np.ndarray | None = None, ahead: tuple[np.ndarray, ...] | None = None
    ) -> None:
        """Step envs `rows`, writing their stacks into `out` or `ahead` (all envs, in order; `step_kernel`) or
        leaving them in the rings."""
        if ahead is None:
            self._ahead = None
        first_call(
            vector_kernel.step_kernel,
            "the Breakout vector env's step kernel",
            rows,
            self._out.obs[:0] if out is None else out,
            self._no_stacks if ahead is None else ahead,
            *self._args,
        )

    def _final_obs(self, ids: np.ndarray, info: dict[str, np.ndarray]) -> None:
        """SameStep: the ended rows' last observations in `info["final_obs"]`, when a row of the batch ended."""
        if self.autoreset_mode != AutoresetMode.SAME_STEP:
            return
        done = self._out.terminated[ids] | self._out.truncated[ids]
        if done.any():
            final = np.zeros((ids.size, *self._out.obs.shape[1:]), dtype=np.uint8)
            final[done] = self._out.final_obs[ids[done]]
            info["final_obs"] = self._public(final)

    def _recv(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        if self.batch_size != self.num_envs:
            return self._recv_async()
        if not self._sent:
            raise BadInput("recv", "no actions sent since the last batch: send() first")
        self._sent = False
        if self._out.obs.nbytes <= vector_kernel.STREAM_BYTES:
            obs = self._new_stacks()
            self._step_kernel(self._rows, out=obs)
        else:
            obs = self._step_ahead()
        self._handed = [*self._handed[-(HANDED_KEPT - 1) :], obs]
        info = self._info(None)
        self._final_obs(self._rows, info)
        out = self._out
        return self._public(obs), out.reward.copy(), out.terminated.copy(), out.truncated.copy(), info

    def _step_ahead(self) -> np.ndarray:
        """The sync step of observations above `STREAM_BYTES`, written ahead (`vector_kernel.step_kernel`)."""
        if self._ahead is None:  # after a reset or a first step: the next stacks' shared frames from the rings
            self._ahead = tuple(self._new_stacks() for _ in range(self._out.obs.shape[1] - 1))
            if self._ahead:
                first_call(
                    vector_kernel.prime,
                    "the Breakout vector env's stack kernel",
                    self._rows,
                    self._out.obs,
                    self._games.heads,
                    self._padded(self._ahead),
                )
        ahead = (*self._ahead, self._new_stacks())  # each the caller's when handed out, as ale-py's
        self._step_kernel(self._rows, ahead=self._padded(ahead))
        self._ahead = ahead[1:]
        return ahead[0]

    def _padded(self, stacks: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
        """`stacks` and empty-rowed arrays after them, at least `KERNEL_STACKS` in all: numba compiles a kernel
        once per tuple length, so stack sizes up to ale-py's default of 4 share one compiled kernel (the kernels
        read only the first `stack_num`)."""
        return stacks + (self._out.obs[:0],) * (KERNEL_STACKS - len(stacks))

    def _recv_async(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """The first `batch_size` queued envs, each reset or stepped in queue order (a run of distinct envs per
        kernel call: an env queued twice is played in queue order). A reset's seed and a step's action go with
        their own queue entry: ale-py sets them on the env when `reset()` or `send()` is called, and its worker
        has by then played what was queued before (with one thread, whenever at most `batch_size` + 1 were
        queued; the rest would take the new seed or action, a race of its worker's timing)."""
        b = self.batch_size
        if len(self._queue) < b:
            raise BadInput("recv", "no batch pending: send() the last batch's actions first")
        items = [self._queue.popleft() for _ in range(b)]
        ids = np.array([item[0] for item in items], dtype=np.int64)
        out = self._out
        out_obs = np.empty((b, *out.obs.shape[1:]), dtype=np.uint8)
        rew, term, trunc = np.empty(b, np.int32), np.empty(b, np.bool_), np.empty(b, np.bool_)
        lives, fn, efn = (np.empty(b, np.int32) for _ in range(3))
        final = np.zeros_like(out_obs) if self.autoreset_mode == AutoresetMode.SAME_STEP else None
        start = 0
        while start < b:
            end, seen = start, set()
            while end < b and items[end][0] not in seen:
                seen.add(items[end][0])
                end += 1
            group = items[start:end]
            resets = np.array([item[0] for item in group if item[1]], dtype=np.int64)
            steps = np.array([item[0] for item in group if not item[1]], dtype=np.int64)
            if resets.size:
                self._games.seeds[resets] = [item[2] for item in group if item[1]]
                self._reset_kernel(resets)
                out.reward[resets], out.terminated[resets], out.truncated[resets] = 0, False, False
            if steps.size:
                self._games.actions[steps] = [item[3] for item in group if not item[1]]
                self._games.paddle_steps[steps] = [item[4] for item in group if not item[1]]
                self._step_kernel(steps)
            part = ids[start:end]
            vector_kernel.stacks(part, out.obs, self._games.heads, out_obs[start:end])
            rew[start:end], term[start:end], trunc[start:end] = (
                out.reward[part],
                out.terminated[part],
                out.truncated[part],
            )
            lives[start:end], fn[start:end] = out.lives[part], out.frame_number[part]
            efn[start:end] = out.episode_frame_number[part]
            if final is not None:
                done = np.flatnonzero(out.terminated[part] | out.truncated[part])
                final[start + done] = out.final_obs[part[done]]
            start = end
        self._last_ids = ids
        info = {"env_id": ids.astype(np.int32), "lives": lives, "frame_number": fn, "episode_frame_number": efn}
        if final is not None and (term | trunc).any():
            info["final_obs"] = self._public(final)
        return self._public(out_obs), rew, term, trunc, info


class VectorALE:
    """`BreakoutVectorEnv.ale`: ale-py's `ALEVectorInterface` calls (`reset(indices, seeds)` with seed -1 for
    none, `send(action indices, paddle strengths)`, `recv()`, the action set, counts and shape) on the env."""

    def __init__(self, env: BreakoutVectorEnv):
        self._env = env

    def reset(self, reset_indices, reset_seeds) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        rows = np.asarray(reset_indices, dtype=np.int64).reshape(-1)
        seeds = np.asarray(reset_seeds, dtype=np.int64).reshape(-1)
        n = self._env.num_envs
        if rows.shape != seeds.shape or ((rows < 0) | (rows >= n)).any() or np.unique(rows).size != rows.size:
            raise BadInput("reset_indices", f"distinct envs in 0..{n - 1}, one seed each")
        return self._env._reset_rows(rows, np.where(seeds < 0, -1, seeds))

    def send(self, action_ids, paddle_strengths) -> None:
        self._env._queue_actions(action_ids, paddle_strengths)

    def recv(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        return self._env._recv()

    def get_action_set(self) -> list:
        from ale_py import Action

        return [Action(int(a)) for a in self._env._action_set]

    def get_num_envs(self) -> int:
        return self._env.num_envs

    def get_observation_shape(self) -> tuple[int, ...]:
        return self._env.single_observation_space.shape

    def handle(self):
        self._env.xla()
