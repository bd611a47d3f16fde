"""`RomALEInterface`: the `ALEInterface` calls Atari wrappers make (`env.unwrapped.ale`), answered by the ROM model.

ALE 0.12.1's semantics: docs/breakout.md, "Use it as ALE"; per call, and its numba cache: its "Module notes"."""

from __future__ import annotations

from functools import lru_cache

import numba
import numpy as np

from policylab.envs.breakout import ale_random
from policylab.envs.breakout.ale_errors import AleRuntimeError
from policylab.envs.breakout.compile_notice import first_call
from policylab.envs.breakout.ram import RAM_LIVES, RAM_N
from policylab.envs.breakout.rom import kernel as rom_kernel
from policylab.envs.breakout.rom.render import GRAY, PALETTE, draw, rom_bytes

ACTION_NAMES = (
    "NOOP",
    "FIRE",
    "UP",
    "RIGHT",
    "LEFT",
    "DOWN",
    "UPRIGHT",
    "UPLEFT",
    "DOWNRIGHT",
    "DOWNLEFT",
    "UPFIRE",
    "RIGHTFIRE",
    "LEFTFIRE",
    "DOWNFIRE",
    "UPRIGHTFIRE",
    "UPLEFTFIRE",
    "DOWNRIGHTFIRE",
    "DOWNLEFTFIRE",
)
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


@lru_cache(maxsize=256)
def paddle_step(strength: float) -> int:
    """ALE's resistance step for a paddle strength: the float product of its step (23,000) and |strength|,
    truncated to an int. Kept per strength: the float32 arithmetic costs more than a step's frames' emulation."""
    return int(np.float32(rom_kernel.PADDLE_DELTA) * np.float32(abs(strength)))


@numba.njit(cache=True, inline="always")
def applied_frame(m, pot, action, step):
    """One emulated frame of the applied ALE action `action` on RAM row m: the paddle's resistance `pot` moved by
    `step` (RIGHT lowers it, LEFT raises it, clamped to the travel), then the cartridge's frame with the button
    as the action presses it. Returns the new resistance and the change of ALE's score."""
    move = PADDLE_MOVE[action]
    if move < 0:
        pot = max(rom_kernel.PADDLE_MIN, pot - step)
    elif move > 0:
        pot = min(rom_kernel.PADDLE_MAX, pot + step)
    before = rom_kernel.ale_score(m)
    m[rom_kernel.FLAGS] |= rom_kernel.frame(m, pot, PRESSES_FIRE[action])
    return pot, rom_kernel.ale_score(m) - before


@numba.njit(cache=True)
def act_frames(m, st, mt, buf, action, step, n, prob, max_frames):
    """`n` calls of ALE's one-frame `act(action)` (resistance step `step`: `paddle_step`) on RAM row `m` and
    counters `st`; returns the reward (the change of ALE's Breakout score over the frames emulated)."""
    reward = 0
    for _ in range(n):
        if not ale_random.frame_repeats(mt, buf, 0, prob):
            st[LAST] = action
            st[STEP] = step
        if st[OVER] or (max_frames > 0 and st[EPISODE_FRAMES] >= max_frames):
            continue
        st[POT], r = applied_frame(m, st[POT], st[LAST], st[STEP])
        reward += r
        st[EPISODE_FRAMES] += 1
        st[FRAMES] += 1
        if m[RAM_LIVES] == 0:
            st[OVER] = 1
    return reward


@numba.njit(cache=True, _nrt=False)
def paint(colours, shown, table, image, out):
    """Bring `image` (the screen through `table`, (128, k): k bytes per pixel, RGB or gray) up to `colours`,
    touching only the pixels whose colour changed since `shown` (a frame changes a few hundred of 33,600), then
    copy it into `out` (the caller's fresh array). A screen row is compared whole first (a loop LLVM vectorises;
    uint64 words were slower); all arrays come flat from the caller (reshaped here, they would cost reference
    counts)."""
    k = table.shape[1]
    for r in range(210):
        differ = 0
        for p in range(160 * r, 160 * r + 160):
            differ |= colours[p] ^ shown[p]
        if differ == 0:
            continue
        for p in range(160 * r, 160 * r + 160):
            if colours[p] != shown[p]:
                shown[p] = colours[p]
                for j in range(k):
                    image[k * p + j] = table[colours[p] >> 1, j]
    for i in range(image.shape[0]):
        out[i] = image[i]


class _Screen:
    """One screen kept up to date incrementally: the colour frame last painted and its image (flat, as `paint`
    takes them)."""

    def __init__(self, table: np.ndarray, shape: tuple[int, ...]):
        self.table = table.reshape(128, -1)
        self.shape = shape
        self.shown = np.zeros(210 * 160, dtype=np.uint8)
        self.image = np.empty(shape, dtype=np.uint8)
        self.image[...] = table[0]
        self.image = self.image.reshape(-1)

    def fresh(self, colours: np.ndarray) -> np.ndarray:
        """The screen of `colours` ((210, 160)) in a new array of the caller's."""
        out = np.empty(self.shape, dtype=np.uint8)
        paint(colours.reshape(-1), self.shown, self.table, self.image, out.reshape(-1))
        return out


class RomALEState:
    """A snapshot from `cloneState` (ALE's `ALEState`): the RAM row, counters and paddle, and the random stream
    if asked for. `serialize()` gives its bytes and `RomALEState(those bytes)` builds it again, as
    `ALEState(bytes)` does; `equals` (and ==) compares two snapshots. It restores into this model only, not into
    a real ALE (nor an `ALEState` into this)."""

    _MAGIC = b"policylab-breakout-state-v1"

    def __init__(
        self,
        serialized: bytes | None = None,
        *,
        row: np.ndarray | None = None,
        counters: np.ndarray | None = None,
        rng: tuple[np.ndarray, np.ndarray] | None = None,
    ):
        if serialized is not None:
            row, counters, rng = self._parse(bytes(serialized))
        if row is None or counters is None:
            raise AleRuntimeError("state", "a RomALEState is built from serialize()'s bytes or by cloneState()")
        self.row, self.counters, self.rng = row, counters, rng

    def serialize(self) -> bytes:
        parts = [self._MAGIC, self.row.astype("<i8").tobytes(), self.counters.astype("<i8").tobytes()]
        if self.rng is not None:
            parts += [self.rng[0].astype("<u4").tobytes(), self.rng[1].astype("<u8").tobytes()]
        return b"".join(parts)

    @classmethod
    def _parse(cls, data: bytes) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
        head, n_row, n_ctr = len(cls._MAGIC), rom_kernel.NI * 8, N_COUNTERS * 8
        n_rng = ale_random.ROW * 4 + 8
        if not data.startswith(cls._MAGIC) or len(data) not in (head + n_row + n_ctr, head + n_row + n_ctr + n_rng):
            raise AleRuntimeError("state", "not the bytes of a policylab Breakout state (RomALEState.serialize)")
        row = np.frombuffer(data, "<i8", rom_kernel.NI, head).astype(np.int64)
        counters = np.frombuffer(data, "<i8", N_COUNTERS, head + n_row).astype(np.int64)
        rng = None
        if len(data) > head + n_row + n_ctr:
            at = head + n_row + n_ctr
            rng = (
                np.frombuffer(data, "<u4", ale_random.ROW, at).astype(np.uint32).reshape(1, ale_random.ROW),
                np.frombuffer(data, "<u8", 1, at + ale_random.ROW * 4).astype(np.uint64),
            )
        return row, counters, rng

    def equals(self, other: RomALEState) -> bool:
        return isinstance(other, RomALEState) and self.serialize() == other.serialize()

    __eq__ = equals
    __hash__ = None

    def getFrameNumber(self) -> int:
        return int(self.counters[FRAMES])

    def getEpisodeFrameNumber(self) -> int:
        return int(self.counters[EPISODE_FRAMES])

    def getCurrentMode(self) -> int:
        return 0

    def getDifficulty(self) -> int:
        return 0


def action_number(action) -> int:
    """ALE's action number of `action`: an int, or a member of `ale_py.Action` (or any enum of ALE's numbers)."""
    value = getattr(action, "value", action)
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise AleRuntimeError("action", f"an ALE action (0-17 or ale_py.Action), got {action!r}") from None
    if not 0 <= number < len(ACTION_NAMES):
        raise AleRuntimeError("action", f"ALE's player-A actions are 0-17, got {number}")
    return number


# ALE's game modes and difficulties of Breakout (`getAvailableModes`, `getAvailableDifficulties`); the ROM
# model plays the defaults (0, 0) only
BREAKOUT_MODES = tuple(range(0, 48, 4))
BREAKOUT_DIFFICULTIES = (0, 1)
# the integer and float settings `setInt`/`setFloat` change here; like ALE's, they take effect at `loadROM`
INT_SETTINGS = ("random_seed", "max_num_frames_per_episode", "frame_skip")
FLOAT_SETTINGS = ("repeat_action_probability",)


class RomALEInterface:
    """One Breakout emulator answering ALE's calls (`getRAM`, `getScreenRGB`, `lives`, `act`, ...).

    The screen is the last emulated frame, as ALE's: `restoreState` and `setRAM` change the state, not what
    `getScreen*` show, until the next frame is emulated (`reset_game` and `loadROM` emulate theirs)."""

    def __init__(self, repeat_action_probability: float = 0.25, max_num_frames_per_episode: int = 0):
        self._settings: dict[str, float | int] = {
            "random_seed": 0,
            "max_num_frames_per_episode": int(max_num_frames_per_episode or 0),
            "frame_skip": 1,
            "repeat_action_probability": float(repeat_action_probability),
        }
        self._rows = np.zeros((1, rom_kernel.NI), dtype=np.int64)
        self._st = np.zeros(N_COUNTERS, dtype=np.int64)
        self._mt, self._buf = ale_random.new_state(1)
        self._colours = np.zeros((210, 160), dtype=np.uint8)
        self._drawn = False
        self._screen_row: np.ndarray | None = None  # the row the screen is drawn from when not the current one
        self._rgb = _Screen(PALETTE, (210, 160, 3))
        self._gray = _Screen(GRAY, (210, 160))
        self.loadROM()
        # compiled now (said on stderr when it takes long: `compile_notice`), not silently on the first step
        first_call(
            act_frames,
            "the Breakout emulator",
            self._row,
            self._st,
            self._mt,
            self._buf,
            0,
            rom_kernel.PADDLE_DELTA,
            0,
            self.repeat_action_probability,
            self.max_num_frames_per_episode,
        )
        first_call(draw, "the Breakout screen", self._row, rom_bytes(), self._colours)

    @property
    def _row(self) -> np.ndarray:
        return self._rows[0]

    def seed(self, random_seed: int) -> None:
        """ALE's `setInt("random_seed", s)` then `loadROM`: a fresh stream seeded with s (mod 2**32), a fresh game."""
        self.setInt("random_seed", random_seed)
        self.loadROM()

    def loadROM(self, rom_file=None) -> None:
        """ALE's `loadROM`: the settings take effect (the random stream seeded with `random_seed`, the frame count
        restarted) and the game is reset. Only Breakout's cartridge (ale-py's `roms.get_rom_path("breakout")`,
        or a file with its bytes) is accepted."""
        if rom_file is not None:
            from pathlib import Path

            path = Path(rom_file)
            if not path.is_file() or not np.array_equal(np.frombuffer(path.read_bytes(), np.uint8), rom_bytes()):
                raise AleRuntimeError("rom_file", f"this emulator plays Breakout's cartridge only, not {str(path)!r}")
        s = self._settings
        self.repeat_action_probability = float(s["repeat_action_probability"])
        self.max_num_frames_per_episode = int(s["max_num_frames_per_episode"])
        self.frame_skip = int(s["frame_skip"])
        ale_random.seed_all(self._mt, self._buf, np.array([int(s["random_seed"]) % 2**32], dtype=np.int64))
        self._st[FRAMES] = 0
        self.reset_game()

    def reset_game(self) -> None:
        row = self._row
        row[:] = 0
        row[:RAM_N] = rom_kernel.RESET_RAM
        row[rom_kernel.SHOWN] = rom_kernel.drawn_with(row)
        self._st[POT] = rom_kernel.PADDLE_DEFAULT
        self._st[LAST] = 0
        self._st[STEP] = rom_kernel.PADDLE_DELTA
        self._st[EPISODE_FRAMES] = 0
        self._st[OVER] = 0
        self._emulated()

    def act(self, action, paddle_strength: float = 1.0, frames: int | None = None) -> int:
        """ALE's `act`: `frame_skip` frames (ALE's setting, 1 unless set) of `action` (a number or an
        `ale_py.Action`); `frames` overrides it (the Gymnasium env's frameskip loop in one call)."""
        self._emulated()
        n = self.frame_skip if frames is None else int(frames)
        return int(
            act_frames(
                self._row,
                self._st,
                self._mt,
                self._buf,
                action_number(action),
                paddle_step(paddle_strength),
                n,
                self.repeat_action_probability,
                self.max_num_frames_per_episode,
            )
        )

    # --- what wrappers read
    def lives(self) -> int:
        return int(self._row[RAM_LIVES])

    def game_over(self, with_truncation: bool = True) -> bool:
        return bool(self._st[OVER]) or (with_truncation and self.game_truncated())

    def game_truncated(self) -> bool:
        """ALE's: the episode has reached `max_num_frames_per_episode` frames, whether or not the game ended on
        that frame too."""
        cap = self.max_num_frames_per_episode
        return cap > 0 and int(self._st[EPISODE_FRAMES]) >= cap

    def getEpisodeFrameNumber(self) -> int:
        return int(self._st[EPISODE_FRAMES])

    def getFrameNumber(self) -> int:
        return int(self._st[FRAMES])

    def getMinimalActionSet(self) -> list:
        """ALE's minimal actions, as `ale_py.Action` members (as ALE returns them)."""
        from ale_py import Action

        return [Action(int(a)) for a in MINIMAL_ACTIONS]

    def getLegalActionSet(self) -> list:
        from ale_py import Action

        return [Action(int(a)) for a in LEGAL_ACTIONS]

    def getAvailableModes(self) -> list[int]:
        return list(BREAKOUT_MODES)

    def getAvailableDifficulties(self) -> list[int]:
        return list(BREAKOUT_DIFFICULTIES)

    def setMode(self, mode: int) -> None:
        """ALE's modes of Breakout are accepted by name; the ROM model plays the default (0) only."""
        if mode not in BREAKOUT_MODES:
            raise AleRuntimeError("mode", f"Invalid game mode requested: {mode!r} (Breakout's: {list(BREAKOUT_MODES)})")
        if mode != 0:
            raise AleRuntimeError("mode", f"the ROM model plays Breakout's default game (mode 0) only, not {mode}")

    def setDifficulty(self, difficulty: int) -> None:
        if difficulty not in BREAKOUT_DIFFICULTIES:
            raise AleRuntimeError("difficulty", f"Invalid difficulty requested: {difficulty!r}")
        if difficulty != 0:
            raise AleRuntimeError("difficulty", f"the ROM model plays difficulty 0 only, not {difficulty}")

    def getInt(self, key: str) -> int:
        """A setting's value as set (ALE's; -1 for a key it does not hold)."""
        return int(self._settings[key]) if key in INT_SETTINGS else -1

    def setInt(self, key: str, value: int) -> None:
        if key not in INT_SETTINGS:
            raise AleRuntimeError(key, f"not a setting of this emulator (it has {', '.join(INT_SETTINGS)})")
        if key == "frame_skip" and int(value) <= 0:
            raise AleRuntimeError(key, f"must be positive, got {value}")
        self._settings[key] = int(value)

    def getFloat(self, key: str) -> float:
        return float(self._settings[key]) if key in FLOAT_SETTINGS else -1.0

    def setFloat(self, key: str, value: float) -> None:
        if key not in FLOAT_SETTINGS:
            raise AleRuntimeError(key, f"not a setting of this emulator (it has {', '.join(FLOAT_SETTINGS)})")
        self._settings[key] = float(value)

    def getRAMSize(self) -> int:
        return RAM_N

    def getScreenDims(self) -> tuple[int, int]:
        return 210, 160

    def getRAM(self, out: np.ndarray | None = None) -> np.ndarray:
        return self._into(out, self._row[:RAM_N].astype(np.uint8))

    def setRAM(self, index: int, value: int) -> None:
        """ALE's `setRAM`: one byte of the RAM; the screen stays the last emulated frame."""
        if not 0 <= int(index) < RAM_N:
            raise AleRuntimeError("index", f"setRAM index out of bounds: {index} (0-{RAM_N - 1})")
        if not 0 <= int(value) <= 255:
            raise AleRuntimeError("value", f"a RAM byte is 0-255, got {value}")
        self._keep_screen()
        self._row[int(index)] = int(value)

    def getScreen(self, out: np.ndarray | None = None) -> np.ndarray:
        """The colour bytes of the screen (ALE's palette indices)."""
        return self._into(out, self._screen_colours().copy())

    def getScreenRGB(self, out: np.ndarray | None = None) -> np.ndarray:
        return self._into(out, self._rgb.fresh(self._screen_colours()))

    def getScreenGrayscale(self, out: np.ndarray | None = None) -> np.ndarray:
        return self._into(out, self._gray.fresh(self._screen_colours()))

    def saveScreenPNG(self, filename) -> None:
        """The screen as an RGB PNG file, as ALE's `saveScreenPNG` writes it: 320 x 210, each pixel twice
        across (the Atari's wide pixels)."""
        from PIL import Image

        try:
            Image.fromarray(np.repeat(self.getScreenRGB(), 2, axis=1)).save(filename, format="PNG")
        except OSError as exc:
            raise AleRuntimeError("filename", f"could not write {str(filename)!r}: {exc.strerror or exc}") from None

    def cloneState(self, include_rng: bool = False) -> RomALEState:
        rng = (self._mt.copy(), self._buf.copy()) if include_rng else None
        return RomALEState(row=self._row.copy(), counters=self._st.copy(), rng=rng)

    def restoreState(self, state: RomALEState) -> None:
        """ALE's: the state (and the random stream if it holds one) comes back; the screen stays the last
        emulated frame until the next `act`."""
        if not isinstance(state, RomALEState):
            raise AleRuntimeError("state", f"a state from this emulator's cloneState, got {type(state).__name__}")
        self._keep_screen()
        self._row[:] = state.row
        self._st[:] = state.counters
        if state.rng is not None:
            self._mt[...], self._buf[...] = state.rng

    def _keep_screen(self) -> None:
        """Keep the row the last emulated frame is drawn from, before the state changes other than by emulation
        (a copy of 1 KB: the frame itself is drawn only if asked for)."""
        if not self._drawn and self._screen_row is None:
            self._screen_row = self._row.copy()

    def _emulated(self) -> None:
        """A frame was emulated: the screen is the current state's."""
        self._drawn = False
        self._screen_row = None

    def _screen_colours(self) -> np.ndarray:
        if not self._drawn:  # drawn on demand: a RAM observation never pays for a screen
            draw(self._row if self._screen_row is None else self._screen_row, rom_bytes(), self._colours)
            self._drawn = True
        return self._colours

    @staticmethod
    def _into(out: np.ndarray | None, value: np.ndarray) -> np.ndarray:
        if out is None:
            return value
        out[...] = value.reshape(out.shape)
        return out
