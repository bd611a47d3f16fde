"""ALE's sticky-action random stream (ale-py 0.12.1), reproduced per env in numba.

What ALE draws: docs/breakout.md, "The same random stream as ALE"; state layout and caches: its "Module notes"."""

from __future__ import annotations

import numba
import numpy as np

N_WORDS = 624
ROW = N_WORDS + 1  # an env's `mt` row: the words, then the index of the next one
CHUNK = 63  # decisions per refill; bit CHUNK of a fresh buffer is the sentinel
EMPTY = np.uint64(1)  # a buffer holding no decisions: only its sentinel is left
_M = 397
_U32 = np.uint64(0xFFFFFFFF)
_INIT_MULT = np.uint64(1812433253)
_ONE, _ZERO = np.uint64(1), np.uint64(0)
_UPPER32, _LOWER32 = np.uint32(0x80000000), np.uint32(0x7FFFFFFF)
_MATRIX_A32, _ONE32 = np.uint32(0x9908B0DF), np.uint32(1)
_TWO32 = 4294967296.0


@numba.njit(cache=True, inline="always")
def mt_seed(mt, buf, i, seed):
    """Seed row i as `std::mt19937::seed(seed)` (MT19937 `init_genrand`) does; seed is taken mod 2**32."""
    x = np.uint64(seed) & _U32
    mt[i, 0] = x
    for k in range(1, N_WORDS):
        x = (_INIT_MULT * (x ^ (x >> np.uint64(30))) + np.uint64(k)) & _U32
        mt[i, k] = x
    mt[i, N_WORDS] = N_WORDS
    buf[i] = EMPTY


@numba.njit(cache=True, inline="always")
def _mix(mt, i, k, k1, km):
    """Word k of the next block from words k, k1 = k + 1 and km = k + 397 (indices mod 624)."""
    y = (mt[i, k] & _UPPER32) | (mt[i, k1] & _LOWER32)
    mt[i, k] = mt[i, km] ^ (y >> _ONE32) ^ (_MATRIX_A32 * (y & _ONE32))


@numba.njit(cache=True)
def _twist(mt, i):
    """The next block of 624 words, in place (the three index ranges spelled out: no modulo per word)."""
    for k in range(N_WORDS - _M):
        _mix(mt, i, k, k + 1, k + _M)
    for k in range(N_WORDS - _M, N_WORDS - 1):
        _mix(mt, i, k, k + 1, k + _M - N_WORDS)
    _mix(mt, i, N_WORDS - 1, 0, _M - 1)


@numba.njit(cache=True, inline="always")
def _temper(y):
    y ^= y >> np.uint64(11)
    y ^= (y << np.uint64(7)) & np.uint64(0x9D2C5680)
    y ^= (y << np.uint64(15)) & np.uint64(0xEFC60000)
    y ^= y >> np.uint64(18)
    return y & _U32


@numba.njit(cache=True, inline="always")
def mt_next(mt, i):
    """Row i's next 32-bit output (`std::mt19937::operator()`), as a uint64. For checking the generator: a
    row read this way must not also feed `frame_repeats`, whose buffer runs ahead of the words."""
    k = np.int64(mt[i, N_WORDS])
    if k >= N_WORDS:
        _twist(mt, i)
        k = 0
    mt[i, N_WORDS] = k + 1
    return _temper(np.uint64(mt[i, k]))


@numba.njit(cache=True, inline="always")
def repeat_threshold(prob):
    """ALE repeats a frame when `nextDouble() < p`, i.e. output / 2**32 < p with p a C++ float: output < p * 2**32,
    a comparison that is exact in doubles (both sides are)."""
    return np.float64(np.float32(prob)) * _TWO32


@numba.njit(cache=True)
def _refill(mt, i, prob, n):
    """The next (CHUNK // n) * n frames' decisions of row i, bit f for frame f, under the sentinel. Each frame
    takes two outputs: A's decides; B's, which a one-player game discards, is passed over untempered. The word
    index is even at every frame (reset draws nothing, a frame draws two, 624 is even), so a pair never
    straddles a twist."""
    threshold = repeat_threshold(prob)
    count = (CHUNK // n) * n
    k = np.int64(mt[i, N_WORDS])
    b = EMPTY << np.uint64(count)
    for f in range(count):
        if k >= N_WORDS:
            _twist(mt, i)
            k = 0
        if np.float64(_temper(np.uint64(mt[i, k]))) < threshold:
            b |= _ONE << np.uint64(f)
        k += 2
    mt[i, N_WORDS] = k
    return b


@numba.njit(cache=True, inline="always")
def step_repeats(mt, buf, i, prob, n):
    """The sticky decisions of row i's next `n` emulated frames (1 <= n <= CHUNK), bit f set when ALE applies
    the previous action again on frame f: one agent step of frameskip n. Decisions are drawn ahead, so every
    call on a row must pass the same `prob` (the repeat probability) and the same `n`."""
    b = buf[i]
    if b == EMPTY:
        b = _refill(mt, i, prob, n)
    buf[i] = b >> np.uint64(n)
    return b & ((_ONE << np.uint64(n)) - _ONE)


@numba.njit(cache=True, inline="always")
def frame_repeats(mt, buf, i, prob):
    """One emulated frame's sticky decision (`step_repeats` with n = 1): True when ALE repeats the previous action."""
    return step_repeats(mt, buf, i, prob, 1) != _ZERO


def new_state(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Unseeded (mt, buf) arrays for n envs."""
    return np.zeros((n, ROW), dtype=np.uint32), np.full(n, EMPTY, dtype=np.uint64)


@numba.njit(cache=True)
def seed_all(mt, buf, seeds):
    """Seed every row i with seeds[i] (one fresh ALE emulator per episode)."""
    for i in range(seeds.shape[0]):
        mt_seed(mt, buf, i, seeds[i])


@numba.njit(cache=True)
def _repeats(mt, buf, n_frames, prob, out):
    for f in range(n_frames):
        out[f] = frame_repeats(mt, buf, 0, prob)


def sticky_repeats(seed: int, n_frames: int, prob: float) -> np.ndarray:
    """bool (n_frames,): whether ALE, seeded with `seed` and sticky `prob`, repeats the previous action on
    each of an episode's first `n_frames` emulated frames (counted over agent steps x frameskip)."""
    mt, buf = new_state(1)
    seed_all(mt, buf, np.array([seed], dtype=np.int64))
    out = np.empty(int(n_frames), dtype=np.bool_)
    _repeats(mt, buf, int(n_frames), float(prob), out)
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
