"""ALE's sticky-action random stream (ale-py 0.12.1), reproduced per env in numba.

Why: with sticky actions the seed is the only thing that makes one ALE Breakout episode differ from
another (the game itself has no randomness), so a shadow episode plays ALE's game on seed s only if
it repeats exactly the frames ALE repeats on seed s. What ALE does, read from its v0.12.1 source
(docs/breakout.md, "The same random stream as ALE", has the file and line references):

- `random_seed` seeds the environment's generator, a `std::mt19937`, once, when `loadROM` builds
  the `StellaEnvironment` (`m_random.seed(seed)`, i.e. MT19937's `init_genrand`).
- `nextDouble()` is `mt() / 2**32`; a frame keeps the new action when `nextDouble() >= p`, where p is
  the `repeat_action_probability` setting stored as a C++ `float`. Otherwise the previous frame's
  action (and paddle strength) is applied again.
- Every emulated frame of `act` draws twice, player A's decision first, then player B's (drawn and
  discarded in a one-player game), whatever p is, so the stream advances two outputs per frame.
- `reset_game` (and the reset inside `loadROM`) draws nothing: its noop and reset frames go through
  `emulate`, which takes no decisions, and its last soft reset makes NOOP the previous action. The
  emulator's own generator (RAM and timer at power-on) is a separate `Random` seeded with the fixed
  `system_random_seed`, not with `random_seed`.

So with a fresh emulator per episode, agent frame k (counted from 0 over the whole episode) is
decided by outputs 2k and 2k + 1 of MT19937 seeded with s, and the frame before the first is NOOP.

State per env: `mt` uint32 (n, 624), the generator's words, and `pos` uint64 (n,), the index of the
next word to temper (624: twist first). Each env touches only its own row.
"""

from __future__ import annotations

import numba
import numpy as np

N_WORDS = 624
_M = 397
_U32 = np.uint64(0xFFFFFFFF)
_UPPER = np.uint64(0x80000000)
_LOWER = np.uint64(0x7FFFFFFF)
_MATRIX_A = np.uint64(0x9908B0DF)
_INIT_MULT = np.uint64(1812433253)
_ONE = np.uint64(1)
_TWO32 = 4294967296.0


@numba.njit(cache=True, inline="always")
def mt_seed(mt, pos, i, seed):
    """Seed row i as `std::mt19937::seed(seed)` (MT19937 `init_genrand`) does; seed is taken mod 2**32."""
    x = np.uint64(seed) & _U32
    mt[i, 0] = x
    for k in range(1, N_WORDS):
        x = (_INIT_MULT * (x ^ (x >> np.uint64(30))) + np.uint64(k)) & _U32
        mt[i, k] = x
    pos[i] = N_WORDS


@numba.njit(cache=True)
def _twist(mt, i):
    for k in range(N_WORDS):
        y = (np.uint64(mt[i, k]) & _UPPER) | (np.uint64(mt[i, (k + 1) % N_WORDS]) & _LOWER)
        v = np.uint64(mt[i, (k + _M) % N_WORDS]) ^ (y >> _ONE)
        if y & _ONE:
            v ^= _MATRIX_A
        mt[i, k] = v


@numba.njit(cache=True, inline="always")
def mt_next(mt, pos, i):
    """Row i's next 32-bit output (`std::mt19937::operator()`), as a uint64."""
    k = np.int64(pos[i])
    if k >= N_WORDS:
        _twist(mt, i)
        k = 0
    y = np.uint64(mt[i, k])
    pos[i] = np.uint64(k + 1)
    y ^= y >> np.uint64(11)
    y ^= (y << np.uint64(7)) & np.uint64(0x9D2C5680)
    y ^= (y << np.uint64(15)) & np.uint64(0xEFC60000)
    y ^= y >> np.uint64(18)
    return y & _U32


@numba.njit(cache=True, inline="always")
def next_double(mt, pos, i):
    """ALE's `Random::nextDouble`: the next output over 2**32, in [0, 1)."""
    return np.float64(mt_next(mt, pos, i)) / _TWO32


@numba.njit(cache=True, inline="always")
def frame_repeats(mt, pos, i, prob):
    """One emulated frame's sticky decision for player A: True when ALE applies the previous action again.

    Draws both of the frame's outputs (A's, then B's, which a one-player game discards). `prob` is the
    repeat probability as given; ALE compares against it rounded to a C++ float.
    """
    a = next_double(mt, pos, i)
    next_double(mt, pos, i)
    return a < np.float64(np.float32(prob))


def new_state(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Unseeded (mt, pos) arrays for n envs."""
    return np.zeros((n, N_WORDS), dtype=np.uint32), np.zeros(n, dtype=np.uint64)


@numba.njit(cache=True)
def seed_all(mt, pos, seeds):
    """Seed every row i with seeds[i] (one fresh ALE emulator per episode)."""
    for i in range(seeds.shape[0]):
        mt_seed(mt, pos, i, seeds[i])


@numba.njit(cache=True)
def _repeats(mt, pos, n_frames, prob, out):
    for f in range(n_frames):
        out[f] = frame_repeats(mt, pos, 0, prob)


def sticky_repeats(seed: int, n_frames: int, prob: float) -> np.ndarray:
    """bool (n_frames,): whether ALE, seeded with `seed` and sticky `prob`, repeats the previous action on
    each of an episode's first `n_frames` emulated frames (counted over agent steps x frameskip)."""
    mt, pos = new_state(1)
    seed_all(mt, pos, np.array([seed], dtype=np.int64))
    out = np.empty(int(n_frames), dtype=np.bool_)
    _repeats(mt, pos, int(n_frames), float(prob), out)
    return out


def applied_actions(seed: int, intended: np.ndarray, prob: float) -> np.ndarray:
    """The action ALE applies on each frame, given the action asked for on each frame (an agent step's
    action repeated frameskip times): the previous applied action where the stream repeats, NOOP (0)
    before the first frame."""
    intended = np.asarray(intended, dtype=np.int64)
    repeat = sticky_repeats(seed, intended.shape[0], prob)
    out = np.empty_like(intended)
    last = 0
    for f in range(intended.shape[0]):
        last = last if repeat[f] else int(intended[f])
        out[f] = last
    return out
