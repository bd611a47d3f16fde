"""The check that ALE repeats exactly the frames `ale_random` predicts, shared by the tests (a few seeds) and
benchmarks/bench_ale_random.py (many): play ALE with sticky actions and record its RAM, then replay a fresh
sticky-free ALE with the per-frame actions the stream says were applied and compare the RAM.

Why RAM and a noisy tracker: the RAM is the whole game state, so equal RAM on every frame means every sticky
decision was the predicted one wherever it changed the game; the tracker keeps the game going for thousands
of frames (a random policy loses its five balls early) while its 30% random actions make the asked action
differ from the last applied one often, which is when a decision shows.

It ships in the package, not in tests/support, because the benchmark runs it too: one definition of what
is compared, for the few seeds a test plays and the many the benchmark plays.
"""

from __future__ import annotations

import numpy as np

from policylab.envs.breakout import ale_random
from policylab.envs.breakout.ale import AleBreakout, Protocol, ram_features
from policylab.envs.breakout.contract import FIRE, LEFT, NOOP, RIGHT, F


def fresh_ale(seed: int, sticky: float, frameskip: int):
    """An `ALEInterface` set up exactly as `AleBreakout` sets one up, reset once more (as an episode starts)."""
    env = AleBreakout(Protocol(sticky=sticky, frameskip=frameskip), seed)
    env.reset()
    return env.ale


def noisy_tracker(ram: np.ndarray, rng: np.random.Generator) -> int:
    """FIRE without a ball, else chase the ball; 30% of the time any action instead."""
    f = ram_features(ram, None)
    if not f[F["ball_in_play"]]:
        a = FIRE
    else:
        d = f[F["ball_x"]] + 1 - (f[F["paddle_x"]] + f[F["paddle_width"]] / 2)
        a = RIGHT if d > 2 else (LEFT if d < -2 else NOOP)
    return a if rng.random() > 0.3 else int(rng.integers(0, 4))


def play_sticky(seed: int, frameskip: int, calls: int, sticky: float) -> tuple[np.ndarray, np.ndarray]:
    """ALE with sticky actions: (RAM after each `act`, the action asked for), to game over or `calls` acts."""
    ale = fresh_ale(seed, sticky, frameskip)
    acts, rng = ale.getMinimalActionSet(), np.random.default_rng(seed)
    rams, asked = [], []
    while len(asked) < calls and not ale.game_over():
        asked.append(noisy_tracker(ale.getRAM(), rng))
        ale.act(acts[asked[-1]])
        rams.append(ale.getRAM().copy())
    return np.array(rams, dtype=np.uint8).reshape(-1, 128), np.array(asked, dtype=np.int64)


def replay(seed: int, per_frame: np.ndarray) -> np.ndarray:
    """A fresh sticky-free ALE at frameskip 1 fed `per_frame`: RAM after every frame."""
    ale = fresh_ale(seed, 0.0, 1)
    acts = ale.getMinimalActionSet()
    out = np.empty((len(per_frame), 128), dtype=np.uint8)
    for k, a in enumerate(per_frame):
        ale.act(acts[int(a)])
        out[k] = ale.getRAM()
    return out


def first_mismatch(seed: int, frameskip: int, calls: int, sticky: float, stream_seed: int | None = None) -> dict:
    """Play `seed` with sticky actions, replay it with the frames `stream_seed`'s stream (default: the same seed)
    predicts; returns the frames played, the agent steps compared and the first step whose RAM differs (None)."""
    rams, asked = play_sticky(seed, frameskip, calls, sticky)
    per_frame = np.repeat(asked, frameskip)
    applied = ale_random.applied_actions(seed if stream_seed is None else stream_seed, per_frame, sticky)
    same = (replay(seed, applied)[frameskip - 1 :: frameskip] == rams).all(axis=1)
    bad = np.flatnonzero(~same)
    return {
        "frames": int(per_frame.size),
        "steps": int(asked.size),
        "repeats_that_changed_the_action": int((applied != per_frame).sum()),
        "first_mismatch_step": int(bad[0]) if bad.size else None,
    }
