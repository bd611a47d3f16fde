"""SB3's `make_atari_env` for Breakout as one Stable-Baselines3 `VecEnv` on the exact model.

Usage, equality with SB3 on ALE, seeds and refusals: docs/breakout.md, "SB3: `make_atari_env` as one VecEnv"."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

try:
    from stable_baselines3.common import atari_wrappers
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvStepReturn
except ImportError as missing:  # an optional extra: say which
    raise ImportError(
        f"policylab.envs.breakout.sb3 needs Stable-Baselines3: pip install 'policylab[sb3]' ({missing})"
    ) from missing

from policylab.envs.breakout import sb3_kernel, vector_kernel
from policylab.envs.breakout.ale_compat import seeded_generator
from policylab.envs.breakout.ale_errors import GymError
from policylab.envs.breakout.compile_notice import first_call
from policylab.envs.breakout.rom import kernel as rom_kernel
from policylab.envs.breakout.rom.ale_interface import ACTION_NAMES, MINIMAL_ACTIONS
from policylab.envs.breakout.rom.render import render_ram
from policylab.errors import BadInput

ENV_IDS = ("BreakoutNoFrameskip-v4", "policylab/BreakoutNoFrameskip-v4")
MAX_FRAMES = 108_000  # BreakoutNoFrameskip-v4's max_num_frames_per_episode
ENV_KEYWORDS = ("render_mode", "max_num_frames_per_episode")
WRAPPER_KEYWORDS = (
    "noop_max",
    "frame_skip",
    "screen_size",
    "terminal_on_life_loss",
    "clip_reward",
    "action_repeat_probability",
)


class BreakoutAtariVecEnv(VecEnv):
    """N `BreakoutNoFrameskip-v4` games, each in SB3's `Monitor` and `AtariWrapper`, as SB3's `DummyVecEnv`
    steps them (autoreset in the ending step, the last observation in `info["terminal_observation"]`).
    Observations (N, screen_size, screen_size, 1) uint8, rewards float32, dones bool."""

    def __init__(
        self,
        n_envs: int = 1,
        *,
        noop_max: int = 30,
        frame_skip: int = 4,
        screen_size: int = 84,
        terminal_on_life_loss: bool = True,
        clip_reward: bool = True,
        render_mode: str | None = "rgb_array",
        max_num_frames_per_episode: int = MAX_FRAMES,
    ):
        if type(n_envs) is not int or n_envs <= 0:
            raise BadInput("n_envs", f"must be a positive integer, got {n_envs!r}")
        if type(noop_max) is not int or noop_max < 0:
            raise BadInput("noop_max", f"must be an integer >= 0, got {noop_max!r}")
        if type(frame_skip) is not int or frame_skip <= 0:
            raise BadInput("frame_skip", f"must be a positive integer, got {frame_skip!r}")
        if type(screen_size) is not int or not 0 < screen_size < vector_kernel.SRC_W:
            raise BadInput("screen_size", f"the resize only shrinks: 1..{vector_kernel.SRC_W - 1}, got {screen_size!r}")
        if type(max_num_frames_per_episode) is not int or max_num_frames_per_episode <= noop_max + 2 * frame_skip:
            # so that a new game's reset (noops, FIRE, RIGHT) never reaches the cap: one real reset per step
            raise BadInput(
                "max_num_frames_per_episode",
                f"must exceed noop_max + 2 x frame_skip "
                f"({noop_max + 2 * frame_skip}), got {max_num_frames_per_episode!r}",
            )
        if render_mode not in (None, "rgb_array"):
            raise GymError("render_mode", f"rgb_array or None, got {render_mode!r}")
        self.render_mode = render_mode
        self.noop_max = noop_max
        aw = atari_wrappers
        self._wrappers = tuple(
            w
            for w, on in (
                (Monitor, True),
                (aw.AtariWrapper, True),
                (aw.NoopResetEnv, noop_max > 0),
                (aw.MaxAndSkipEnv, frame_skip > 1),
                (aw.EpisodicLifeEnv, terminal_on_life_loss),
                (aw.FireResetEnv, True),
                (aw.WarpFrame, True),
                (aw.ClipRewardEnv, clip_reward),
            )
            if on
        )
        self._cfg = sb3_kernel.Config(
            skip=frame_skip,
            noop_max=noop_max,
            life_loss=bool(terminal_on_life_loss),
            clip=bool(clip_reward),
            max_frames=max_num_frames_per_episode,
        )
        self._screen = vector_kernel.screen_tables(sb3_kernel.PAIR_GRAY, screen_size, screen_size)
        n = n_envs
        # ale-py's constructor loads the game: the screen of a reset game until the first step
        state = np.zeros((n, rom_kernel.NI), dtype=np.int64)
        state[:, : rom_kernel.RAM_N] = rom_kernel.RESET_RAM
        pairs = np.zeros((n, 2, rom_kernel.NI), dtype=np.int64)
        counters = np.zeros((n, sb3_kernel.NC), dtype=np.int64)
        counters[:, sb3_kernel.REAL_DONE] = 1  # EpisodicLifeEnv starts as after a real end
        self._games = sb3_kernel.Games(
            state=state,
            pairs=pairs,
            shown=np.zeros_like(pairs),
            counters=counters,
            noops=np.zeros(n, dtype=np.int64),
            used=np.zeros(n, dtype=np.int64),
        )
        self._rngs = [seeded_generator(None)[0] for _ in range(n)]  # ale-py's constructor: fresh entropy
        self._draw_noops(range(n))
        obs = np.zeros((n, screen_size, screen_size), dtype=np.uint8)
        self._out = sb3_kernel.Results(
            obs=obs,
            final_obs=np.zeros_like(obs),
            reward=np.zeros(n, dtype=np.int64),
            terminated=np.zeros(n, dtype=np.bool_),
            truncated=np.zeros(n, dtype=np.bool_),
            episode=np.zeros((n, 2), dtype=np.int64),
            info=np.zeros((n, 3), dtype=np.int64),
        )
        self._work = sb3_kernel.new_work(screen_size)
        self._args = vector_kernel.plain(self._games, self._cfg, self._screen, self._work, self._out)
        self._actions: np.ndarray | None = None
        self._t_start = time.time()  # the Monitor's clock, for `episode["t"]`
        super().__init__(
            n, spaces.Box(0, 255, (screen_size, screen_size, 1), np.uint8), spaces.Discrete(len(MINIMAL_ACTIONS))
        )

    def _draw_noops(self, envs) -> None:
        """Each env's count for its next NoopResetEnv reset, drawn ahead from its generator (nothing else draws
        from it, so the counts come in SB3's order); the kernel uses one per real reset."""
        for i in envs:
            self._games.noops[i] = self._rngs[i].integers(1, self.noop_max + 1) if self.noop_max > 0 else 0
            self._games.used[i] = 0

    def _after_kernel(self) -> None:
        self._draw_noops(np.flatnonzero(self._games.used))

    def reset(self) -> np.ndarray:
        """DummyVecEnv's reset: each env's chain reset, with its pending seed (`seed()`), which takes effect
        where the reset is a real one (EpisodicLifeEnv's NOOP step after a lost life ignores it, as SB3's)."""
        for i, s in enumerate(self._seeds):
            counters = self._games.counters
            if s is not None and (counters[i, sb3_kernel.REAL_DONE] or not self._cfg.life_loss):
                self._rngs[i] = seeded_generator(int(s))[0]
                self._draw_noops([i])
                counters[i, sb3_kernel.FRAMES] = 0  # ale-py's reload of the game restarts the frame count
        rows = np.arange(self.num_envs, dtype=np.int64)
        first_call(
            sb3_kernel.reset_kernel,
            "the SB3 Breakout chain",
            rows,
            *self._args,
        )
        self._after_kernel()
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{} for _ in range(self.num_envs)]  # FireResetEnv's reset returns no info
        return self._out.obs[..., None].copy()

    def step_async(self, actions: np.ndarray) -> None:
        a = np.asarray(actions).reshape(-1)
        if a.shape != (self.num_envs,) or not np.all((a >= 0) & (a < len(MINIMAL_ACTIONS))):
            raise BadInput("actions", f"one action in 0..{len(MINIMAL_ACTIONS) - 1} per env ({self.num_envs})")
        self._actions = MINIMAL_ACTIONS[a.astype(np.int64)]

    def step_wait(self) -> VecEnvStepReturn:
        if self._actions is None:
            raise BadInput("step_wait", "step_async(actions) first")
        out = self._out
        sb3_kernel.step_kernel(self._actions, *self._args)
        self._actions = None
        self._after_kernel()
        done = out.terminated | out.truncated
        infos: list[dict[str, Any]] = []
        for i in range(self.num_envs):
            lives, efn, fn = (int(v) for v in out.info[i])
            info: dict[str, Any] = {"lives": lives, "episode_frame_number": efn, "frame_number": fn}
            if out.episode[i, 0] >= 0:
                info["episode"] = {
                    "r": float(out.episode[i, 1]),
                    "l": int(out.episode[i, 0]),
                    "t": round(time.time() - self._t_start, 6),
                }
            info["TimeLimit.truncated"] = bool(out.truncated[i] and not out.terminated[i])
            if done[i]:
                info["terminal_observation"] = out.final_obs[i][..., None].copy()
                self.reset_infos[i] = {}
            infos.append(info)
        return out.obs[..., None].copy(), out.reward.astype(np.float32), done, infos

    def close(self) -> None:
        """Nothing to release: the games are arrays of this object."""

    def get_images(self) -> Sequence[np.ndarray | None]:
        """Each game's last emulated frame, RGB, as ALE's `render()` shows it."""
        if self.render_mode != "rgb_array":
            return [None] * self.num_envs
        return [render_ram(row) for row in self._games.state]

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        single = {
            "render_mode": self.render_mode,
            "observation_space": self.observation_space,
            "action_space": self.action_space,
        }
        if attr_name not in single:
            raise AttributeError(
                f"the SB3 Breakout VecEnv's games have no attribute {attr_name!r} to read "
                f"(they answer {', '.join(single)})"
            )
        return [single[attr_name]] * len(self._get_indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        raise AttributeError(f"the SB3 Breakout VecEnv's games take no attributes (asked to set {attr_name!r})")

    def env_method(self, method_name: str, *method_args, indices: VecEnvIndices = None, **method_kwargs) -> list[Any]:
        if method_name != "get_action_meanings":
            raise AttributeError(
                f"the SB3 Breakout VecEnv's games have no method {method_name!r} to call "
                "(they answer get_action_meanings)"
            )
        return [[ACTION_NAMES[a] for a in MINIMAL_ACTIONS] for _ in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        """As SB3's `is_wrapped` answers for `make_atari_env`'s chain (Monitor, AtariWrapper and the wrappers it
        applies with these keywords)."""
        wrapped = any(issubclass(w, wrapper_class) for w in self._wrappers)
        return [wrapped] * len(self._get_indices(indices))


def make_atari_env(
    env_id: str = "BreakoutNoFrameskip-v4",
    n_envs: int = 1,
    seed: int | None = None,
    start_index: int = 0,
    monitor_dir: str | None = None,
    wrapper_kwargs: dict[str, Any] | None = None,
    env_kwargs: dict[str, Any] | None = None,
    vec_env_cls: type | None = None,
    vec_env_kwargs: dict[str, Any] | None = None,
    monitor_kwargs: dict[str, Any] | None = None,
) -> BreakoutAtariVecEnv:
    """SB3's `make_atari_env`, with its signature and seeding: env i reset first with `seed + i`, the action
    space seeded with `seed + start_index`."""
    if env_id not in ENV_IDS:
        raise GymError("env_id", f"the SB3 adapter plays {' or '.join(ENV_IDS)}, got {env_id!r}")
    for name, value in (
        ("monitor_dir", monitor_dir),
        ("vec_env_cls", vec_env_cls),
        ("vec_env_kwargs", vec_env_kwargs),
        ("monitor_kwargs", monitor_kwargs),
    ):
        if value:
            raise BadInput(
                name, "not supported by the SB3 Breakout adapter (it is its own VecEnv and writes no Monitor files)"
            )
    wrapper = dict(wrapper_kwargs or {})
    unknown = sorted(set(wrapper) - set(WRAPPER_KEYWORDS))
    if unknown:
        raise BadInput("wrapper_kwargs", f"AtariWrapper takes no {unknown[0]!r}")
    if wrapper.pop("action_repeat_probability", 0.0):
        raise BadInput("wrapper_kwargs.action_repeat_probability", "sticky actions are not supported here")
    env = dict(env_kwargs or {})
    if set(env) - set(ENV_KEYWORDS):
        raise BadInput("env_kwargs", f"{' and '.join(ENV_KEYWORDS)} only, got {sorted(env)}")
    venv = BreakoutAtariVecEnv(n_envs, **{"render_mode": "rgb_array", **env}, **wrapper)
    if seed is not None:
        venv.action_space.seed(seed + start_index)
    venv.seed(seed)
    return venv
