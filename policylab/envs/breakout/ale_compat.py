"""`policylab/Breakout-v5` (and ALE's v4 ids): ALE's `ALE/Breakout-v5` Gymnasium env, played by the ROM model.

Arguments, seeds, methods and refusals as ale-py 0.12.1's: docs/breakout.md, "Use it as ALE"."""

from __future__ import annotations

import operator
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces, utils
from gymnasium.utils import seeding

from policylab.envs.breakout.ale_errors import GymError
from policylab.envs.breakout.rom.ale_interface import JOYSTICK, RomALEInterface

OBS_TYPES = ("rgb", "grayscale", "ram")


def seeded_generator(seed: int | None) -> tuple[np.random.Generator, np.uint32, np.uint32]:
    """ale-py's derivation of a seed: two words of `SeedSequence(seed)`, the first seeding the env's numpy
    generator (returned with it), the second ALE's `random_seed`."""
    np_seed, ale_seed = np.random.SeedSequence(seed).generate_state(n_words=2)
    return seeding.np_random(int(np_seed))[0], np_seed, ale_seed


def _frameskip(frameskip) -> int | tuple[int, int]:
    """ale-py's checks of `frameskip`, raising `gymnasium.error.Error` where it does."""
    if isinstance(frameskip, tuple):
        if len(frameskip) != 2 or not 0 < int(frameskip[0]) < int(frameskip[1]):
            raise GymError("frameskip", f"a (min, max) range needs 0 < min < max, got {frameskip!r}")
        return int(frameskip[0]), int(frameskip[1])
    try:
        value = operator.index(frameskip)
    except TypeError:
        raise GymError("frameskip", f"an int or a (min, max) tuple, got {type(frameskip).__name__}") from None
    if value <= 0:
        raise GymError("frameskip", f"must be positive, got {value}")
    return value


# ale-py's keys for human play (`get_keys_to_action`): wasd for the stick, space for FIRE, e for NOOP
_KEYS = {"UP": "w", "LEFT": "a", "RIGHT": "d", "DOWN": "s", "FIRE": " "}


def _keys(name: str) -> tuple[str, ...]:
    """The keys ale-py maps to action `name`, in its order (UP/DOWN, then LEFT/RIGHT, then FIRE)."""
    if name == "NOOP":
        return ("e",)
    parts = [p for p in ("UP", "DOWN", "LEFT", "RIGHT", "FIRE") if p in name]
    return tuple(_KEYS[p] for p in parts)


class BreakoutV5Env(gym.Env, utils.EzPickle):
    """Atari Breakout with ALE's v5 constructor: `obs_type`, `frameskip`, `repeat_action_probability`,
    `full_action_space`, `max_num_frames_per_episode`, `mode`, `difficulty`, `render_mode` (docs/breakout.md,
    "Use it as ALE", says what is refused)."""

    # ALE's "human" window is drawn by the SDL2 ale-py bundles; this env has no window code, and no machine it is
    # tested on has a display to check one against, so it offers rgb_array only (HumanRendering shows those)
    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(
        self,
        game: str = "breakout",
        mode: int | None = None,
        difficulty: int | None = None,
        obs_type: str = "rgb",
        frameskip: int | tuple[int, int] = 4,
        repeat_action_probability: float = 0.25,
        full_action_space: bool = False,
        continuous: bool = False,
        continuous_action_threshold: float = 0.5,
        max_num_frames_per_episode: int | None = 108_000,
        render_mode: str | None = None,
        sound_obs: bool = False,
    ):
        if game != "breakout":
            raise GymError("game", f"this env plays breakout only, got {game!r}")
        if obs_type not in OBS_TYPES:
            raise GymError("obs_type", f"one of {', '.join(OBS_TYPES)}, got {obs_type!r}")
        if sound_obs:
            raise GymError("sound_obs", "not supported: the ROM model produces no sound")
        if render_mode == "human":
            raise GymError(
                "render_mode",
                "'human' is not supported (this env opens no window); use 'rgb_array', "
                "and gymnasium.wrappers.HumanRendering (pygame) to show the frames",
            )
        if render_mode not in (None, "rgb_array"):
            raise GymError("render_mode", f"None or 'rgb_array', got {render_mode!r}")
        if not 0.0 <= float(repeat_action_probability) <= 1.0:
            raise GymError("repeat_action_probability", f"must be in [0, 1], got {repeat_action_probability!r}")
        utils.EzPickle.__init__(
            self,
            game=game,
            mode=mode,
            difficulty=difficulty,
            obs_type=obs_type,
            frameskip=frameskip,
            repeat_action_probability=repeat_action_probability,
            full_action_space=full_action_space,
            continuous=continuous,
            continuous_action_threshold=continuous_action_threshold,
            max_num_frames_per_episode=max_num_frames_per_episode,
            render_mode=render_mode,
            sound_obs=sound_obs,
        )
        self._frameskip = _frameskip(frameskip)
        self._obs_type = obs_type
        self._game_mode, self._game_difficulty = mode, difficulty
        self.render_mode = render_mode
        self.ale = RomALEInterface(repeat_action_probability, max_num_frames_per_episode or 0)
        self.seed_game()
        self.load_game()
        full = full_action_space or continuous
        self._action_set = self.ale.getLegalActionSet() if full else self.ale.getMinimalActionSet()
        self.continuous = bool(continuous)
        self.continuous_action_threshold = float(continuous_action_threshold)
        if self.continuous:  # radius, angle, fire
            self.action_space = spaces.Box(
                low=np.array([0.0, -np.pi, 0.0], dtype=np.float32),
                high=np.array([1.0, np.pi, 1.0], dtype=np.float32),
                dtype=np.float32,
            )
        else:
            self.action_space = spaces.Discrete(len(self._action_set))
        shape = {"rgb": (210, 160, 3), "grayscale": (210, 160), "ram": (128,)}[obs_type]
        self.observation_space = spaces.Box(low=0, high=255, shape=shape, dtype=np.uint8)

    def seed_game(self, seed: int | None = None) -> tuple[np.uint32, np.uint32]:
        """ale-py's derivation: SeedSequence(seed) -> (numpy generator's seed, ALE's random_seed, as an int32);
        the stream starts at the next `load_game`."""
        self._np_random, np_seed, ale_seed = seeded_generator(seed)
        self.ale.setInt("random_seed", int(np.uint32(ale_seed).view(np.int32)))
        return np_seed, ale_seed

    def load_game(self) -> None:
        """ale-py's: the game reloaded (the settings take effect), then its mode and difficulty set (the ROM
        model plays the defaults only: others are refused here, as ALE refuses modes Breakout lacks)."""
        self.ale.loadROM()
        if self._game_mode is not None:
            self.ale.setMode(self._game_mode)
        if self._game_difficulty is not None:
            self.ale.setDifficulty(self._game_difficulty)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed, options=options)
        seeded_with = None
        if seed is not None:
            seeded_with = self.seed_game(seed)
            self.load_game()
        self.ale.reset_game()
        info = self._info()
        if seeded_with is not None:
            info["seeds"] = seeded_with
        return self._obs(), info

    def step(self, action):
        skip = self._frameskip if isinstance(self._frameskip, int) else self.np_random.integers(*self._frameskip)
        if self.continuous:
            action, strength = self._joystick(action)
        else:
            action, strength = self._action_set[action], 1.0
        reward = self.ale.act(action, strength, frames=int(skip))
        return (
            self._obs(),
            float(reward),
            self.ale.game_over(with_truncation=False),
            self.ale.game_truncated(),
            self._info(),
        )

    def render(self) -> np.ndarray | None:
        if self.render_mode == "rgb_array":
            return self.ale.getScreenRGB()
        raise GymError("render_mode", "render() needs render_mode='rgb_array'")

    def _joystick(self, action) -> tuple[int, float]:
        """A continuous action (radius r, angle theta, fire) as ale-py reads it: the stick's x = r cos theta and
        y = r sin theta, each past the threshold one way or the other, and fire past it, name the ALE action;
        r is the paddle strength."""
        a = np.asarray(action, dtype=np.float32)
        if a.shape != (3,):
            raise GymError("action", f"a continuous action is (radius, theta, fire), got shape {a.shape}")
        t = self.continuous_action_threshold
        x, y = a[0] * np.cos(a[1]), a[0] * np.sin(a[1])
        h, v = int(x > t) - int(x < -t), int(y > t) - int(y < -t)
        return int(JOYSTICK[h + 1, v + 1, int(a[2] > t)]), float(a[0])

    def get_action_meanings(self) -> list[str]:
        return [a.name for a in self._action_set]

    def get_keys_to_action(self) -> dict[tuple[str, ...], int]:
        """ale-py's keys for `gymnasium.utils.play`: wasd for the stick, space for FIRE, e for NOOP."""
        if self.continuous:
            raise AttributeError(
                "`get_keys_to_action` can't be provided for this Atari environment as `continuous=True`."
            )
        return {_keys(a.name): i for i, a in enumerate(self._action_set)}

    @staticmethod
    def map_action_idx(left_center_right: int, down_center_up: int, fire: bool):
        """ale-py's: the `ale_py.Action` of a stick direction (-1, 0, 1 each way) and the button."""
        from ale_py import Action

        if left_center_right not in (-1, 0, 1) or down_center_up not in (-1, 0, 1):
            raise LookupError(
                f"Unexpected action mapping, expected `left_center_right` and `down_center_up` to be "
                f"in {{-1, 0, 1}}; received {left_center_right=}, {down_center_up=} and {fire=}."
            )
        return Action(int(JOYSTICK[left_center_right + 1, down_center_up + 1, int(bool(fire))]))

    def clone_state(self, include_rng: bool = False):
        """ale-py's: the emulator's state (`ale.cloneState`), with the sticky-action stream if `include_rng`."""
        return self.ale.cloneState(include_rng=include_rng)

    def restore_state(self, state) -> None:
        """ale-py's: the emulator's state back (`ale.restoreState`)."""
        self.ale.restoreState(state)

    def _obs(self) -> np.ndarray:
        if self._obs_type == "ram":
            return self.ale.getRAM()
        if self._obs_type == "rgb":
            return self.ale.getScreenRGB()
        return self.ale.getScreenGrayscale()

    def _info(self) -> dict[str, int]:
        return {
            "lives": self.ale.lives(),
            "episode_frame_number": self.ale.getEpisodeFrameNumber(),
            "frame_number": self.ale.getFrameNumber(),
        }
