"""The calls of ALE's `ALEInterface` that Atari wrappers use, answered by the ROM model (`rom.kernel`).

Why: the ecosystem's wrappers (gymnasium's AtariPreprocessing, SB3's AtariWrapper, CleanRL's chains)
reach past the Gymnasium API into `env.unwrapped.ale` for lives, screens, RAM and state snapshots.
`RomALEInterface` is one Breakout emulator with ALE 0.12.1's semantics for those calls:

- `act(action)` plays one frame per call (the Gymnasium env sets ALE's `frame_skip` to 1 as ale-py
  does): two sticky decisions are drawn from ALE's MT19937 stream on every call (`ale_random`), even
  once the episode is over; a frame is emulated only while the game is not over and the episode has
  fewer than `max_num_frames_per_episode` frames (ALE's `oneStepAct` refuses the rest);
- `reset_game()` puts back the RAM ALE reaches after its reset sequence, the paddle at its default
  resistance and NOOP as the previous action; the random stream and the total frame count go on;
- `seed(s)` (ALE's `random_seed` then `loadROM`): a fresh stream and a zero frame count.

numba caches `act_frames` with compiled copies of `rom.kernel`'s functions, keyed on this file alone: after
a change to `rom/kernel.py`, clear this module's cache (`rom/__pycache__/ale_interface.*.nb*`).

Actions are ALE's action numbers (0-17); a paddle game reads only their RIGHT, LEFT and FIRE parts, and
`paddle_strength` (continuous actions) scales the resistance step as ALE does (`paddle_step`); the step is
sticky along with the action.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from policylab.envs.breakout import ale_random as R
from policylab.envs.breakout.rom import kernel as EK
from policylab.envs.breakout.rom.render import GRAY, PALETTE, draw, rom_bytes

ACTION_NAMES = ("NOOP", "FIRE", "UP", "RIGHT", "LEFT", "DOWN", "UPRIGHT", "UPLEFT", "DOWNRIGHT", "DOWNLEFT",
                "UPFIRE", "RIGHTFIRE", "LEFTFIRE", "DOWNFIRE", "UPRIGHTFIRE", "UPLEFTFIRE", "DOWNRIGHTFIRE",
                "DOWNLEFTFIRE")
MINIMAL_ACTIONS = np.array([0, 1, 3, 4], dtype=np.int64)  # NOOP, FIRE, RIGHT, LEFT
LEGAL_ACTIONS = np.arange(18, dtype=np.int64)
# what each ALE action does to a paddle (ALE's applyActionPaddles): resistance step sign, button
PADDLE_MOVE = np.array([-1 if "RIGHT" in n else 1 if "LEFT" in n else 0 for n in ACTION_NAMES], dtype=np.int64)
PRESSES_FIRE = np.array(["FIRE" in n for n in ACTION_NAMES], dtype=np.bool_)

def _joystick_table() -> np.ndarray:
    """(3, 3, 2): ALE's action number for a stick's horizontal (-1 left, 0, 1 right) and vertical (-1 down, 0,
    1 up) direction and the button (ale-py's `map_action_idx`, which continuous actions go through)."""
    table = np.zeros((3, 3, 2), dtype=np.int64)
    for h in (-1, 0, 1):
        for v in (-1, 0, 1):
            for fire in (0, 1):
                name = ("UP" if v > 0 else "DOWN" if v < 0 else "") + ("RIGHT" if h > 0 else "LEFT" if h < 0 else "")
                table[h + 1, v + 1, fire] = ACTION_NAMES.index((name + ("FIRE" if fire else "")) or "NOOP")
    return table


JOYSTICK = _joystick_table()

# the emulator's counters and paddle, beside its RAM row: LAST is the last applied action, STEP the resistance
# step its paddle strength gave (sticky with it)
POT, LAST, STEP, EPISODE_FRAMES, FRAMES, OVER = range(6)
N_COUNTERS = 6


def paddle_step(strength: float) -> int:
    """ALE's resistance step for a paddle strength: the float product of its step (23,000) and |strength|,
    truncated to an int."""
    return int(np.float32(EK.PADDLE_DELTA) * np.float32(abs(strength)))


@numba.njit(cache=True, inline="always")
def applied_frame(m, pot, action, step):
    """One emulated frame of the applied ALE action `action` on RAM row m: the paddle's resistance `pot` moved by
    `step` (RIGHT lowers it, LEFT raises it, clamped to the travel), then the cartridge's frame with the button
    as the action presses it. Returns the new resistance and the change of ALE's score."""
    move = PADDLE_MOVE[action]
    if move < 0:
        pot = max(EK.PADDLE_MIN, pot - step)
    elif move > 0:
        pot = min(EK.PADDLE_MAX, pot + step)
    before = EK.ale_score(m)
    m[EK.FLAGS] |= EK.frame(m, pot, PRESSES_FIRE[action])
    return pot, EK.ale_score(m) - before


@numba.njit(cache=True)
def act_frames(m, st, mt, buf, action, step, n, prob, max_frames):
    """`n` calls of ALE's one-frame `act(action)` (resistance step `step`: `paddle_step`) on RAM row `m` and
    counters `st`; returns the reward (the change of ALE's Breakout score over the frames emulated)."""
    reward = 0
    for _ in range(n):
        if not R.frame_repeats(mt, buf, 0, prob):
            st[LAST] = action
            st[STEP] = step
        if st[OVER] or (max_frames > 0 and st[EPISODE_FRAMES] >= max_frames):
            continue
        st[POT], r = applied_frame(m, st[POT], st[LAST], st[STEP])
        reward += r
        st[EPISODE_FRAMES] += 1
        st[FRAMES] += 1
        if m[57] == 0:
            st[OVER] = 1
    return reward


@numba.njit(cache=True)
def paint(colours, shown, table, out):
    """Bring `out` (the screen through `table`: RGB rows or gray bytes per colour) up to `colours`, touching
    only the pixels whose colour changed since `shown` (a frame changes a few hundred of 33,600). `colours`
    and `shown` are compared 8 pixels at a time through their uint64 views (`words`)."""
    new = colours.reshape(-1)
    old = shown.reshape(-1)
    new_w = new.view(np.uint64)
    old_w = old.view(np.uint64)
    flat = out.reshape(-1, *out.shape[2:])
    for w in range(new_w.shape[0]):
        if new_w[w] != old_w[w]:
            old_w[w] = new_w[w]
            for p in range(8 * w, 8 * w + 8):
                flat[p] = table[new[p] >> 1]


class _Screen:
    """One screen kept up to date incrementally: the colour frame last painted and its image."""

    def __init__(self, table: np.ndarray, shape: tuple[int, ...]):
        self.table = table
        self.shown = np.zeros((210, 160), dtype=np.uint8)
        self.image = np.empty(shape, dtype=np.uint8)
        self.image[...] = table[0]

    def update(self, colours: np.ndarray) -> np.ndarray:
        paint(colours, self.shown, self.table, self.image)
        return self.image


@dataclass(frozen=True)
class RomALEState:
    """A snapshot from `cloneState`: the RAM row, counters and paddle, and the random stream if asked for."""

    row: np.ndarray
    counters: np.ndarray
    rng: tuple[np.ndarray, np.ndarray] | None


class RomALEInterface:
    """One Breakout emulator answering ALE's calls (`getRAM`, `getScreenRGB`, `lives`, `act`, ...)."""

    def __init__(self, repeat_action_probability: float = 0.25, max_num_frames_per_episode: int = 0):
        self.repeat_action_probability = float(repeat_action_probability)
        self.max_num_frames_per_episode = int(max_num_frames_per_episode or 0)
        self._rows = np.zeros((1, EK.NI), dtype=np.int64)
        self._st = np.zeros(N_COUNTERS, dtype=np.int64)
        self._mt, self._buf = R.new_state(1)
        self._colours = np.zeros((210, 160), dtype=np.uint8)
        self._drawn = False
        self._rgb = _Screen(PALETTE, (210, 160, 3))
        self._gray = _Screen(GRAY, (210, 160))
        self.seed(0)

    @property
    def _row(self) -> np.ndarray:
        return self._rows[0]

    def seed(self, random_seed: int) -> None:
        """ALE's `setInt("random_seed", s)` then `loadROM`: a fresh stream seeded with s (mod 2**32), a fresh game."""
        R.seed_all(self._mt, self._buf, np.array([int(random_seed) % 2**32], dtype=np.int64))
        self._st[FRAMES] = 0
        self.reset_game()

    def reset_game(self) -> None:
        row = self._row
        row[:] = 0
        row[: EK.RAM_N] = EK.RESET_RAM
        row[EK.SHOWN] = EK.drawn_with(row)
        self._st[POT] = EK.PADDLE_DEFAULT
        self._st[LAST] = 0
        self._st[STEP] = EK.PADDLE_DELTA
        self._st[EPISODE_FRAMES] = 0
        self._st[OVER] = 0
        self._drawn = False

    def act(self, action: int, paddle_strength: float = 1.0, frames: int = 1) -> int:
        """`frames` of ALE's one-frame `act` (the Gymnasium env's frameskip loop in one call)."""
        self._drawn = False
        return int(act_frames(self._row, self._st, self._mt, self._buf, int(action), paddle_step(paddle_strength),
                              int(frames), self.repeat_action_probability, self.max_num_frames_per_episode))

    # --- what wrappers read
    def lives(self) -> int:
        return int(self._row[57])

    def game_over(self, with_truncation: bool = True) -> bool:
        return bool(self._st[OVER]) or (with_truncation and self.game_truncated())

    def game_truncated(self) -> bool:
        cap = self.max_num_frames_per_episode
        return not self._st[OVER] and cap > 0 and int(self._st[EPISODE_FRAMES]) >= cap

    def getEpisodeFrameNumber(self) -> int:  # noqa: N802 (ALE's names, which wrappers call)
        return int(self._st[EPISODE_FRAMES])

    def getFrameNumber(self) -> int:  # noqa: N802
        return int(self._st[FRAMES])

    def getMinimalActionSet(self) -> list[int]:  # noqa: N802
        return [int(a) for a in MINIMAL_ACTIONS]

    def getLegalActionSet(self) -> list[int]:  # noqa: N802
        return [int(a) for a in LEGAL_ACTIONS]

    def getRAMSize(self) -> int:  # noqa: N802
        return EK.RAM_N

    def getScreenDims(self) -> tuple[int, int]:  # noqa: N802
        return 210, 160

    def getRAM(self, out: np.ndarray | None = None) -> np.ndarray:  # noqa: N802
        return self._into(out, self._row[: EK.RAM_N].astype(np.uint8))

    def getScreen(self, out: np.ndarray | None = None) -> np.ndarray:  # noqa: N802
        """The colour bytes of the screen (ALE's palette indices)."""
        return self._into(out, self._screen_colours().copy())

    def getScreenRGB(self, out: np.ndarray | None = None) -> np.ndarray:  # noqa: N802
        return self._into(out, self._rgb.update(self._screen_colours()).copy())

    def getScreenGrayscale(self, out: np.ndarray | None = None) -> np.ndarray:  # noqa: N802
        return self._into(out, self._gray.update(self._screen_colours()).copy())

    def cloneState(self, include_rng: bool = False) -> RomALEState:  # noqa: N802
        rng = (self._mt.copy(), self._buf.copy()) if include_rng else None
        return RomALEState(self._row.copy(), self._st.copy(), rng)

    def restoreState(self, state: RomALEState) -> None:  # noqa: N802
        self._row[:] = state.row
        self._st[:] = state.counters
        if state.rng is not None:
            self._mt[...], self._buf[...] = state.rng
        self._drawn = False

    def _screen_colours(self) -> np.ndarray:
        if not self._drawn:  # drawn on demand: a RAM observation never pays for a screen
            draw(self._row, rom_bytes(), self._colours)
            self._drawn = True
        return self._colours

    @staticmethod
    def _into(out: np.ndarray | None, value: np.ndarray) -> np.ndarray:
        if out is None:
            return value
        out[...] = value.reshape(out.shape)
        return out
