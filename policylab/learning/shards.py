"""How a learner spreads its envs over threads.

Why shards: torch's intra-op threads parallelise only its larger ops, while an env kernel, the
observation and the many small per-step ops stay serial; two single-threaded learners side by side
each ran nearly as fast as one alone (measured on Breakout: 265k against 288k agent steps/s). So a
learner with S threads splits its envs into S shards, each played (and its share of every minibatch
differentiated, `ppo.PPO`) on its own thread with torch single-threaded. Nothing depends on thread
timing, so a run is deterministic for a given thread count.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Sequence

import numpy as np
import torch


def deterministic_torch() -> None:
    """One intra-op thread per shard and deterministic kernels, for every learner in this process."""
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)


def sizes(envs: int, count: int) -> list[int]:
    """Envs per shard, as even as possible, the larger shards first."""
    return [len(c) for c in np.array_split(np.arange(envs), count)]


def seeds(seed: int, count: int) -> list[int]:
    """One generator seed per shard (for its sampled actions), drawn from the run's seed."""
    draws = np.random.SeedSequence(seed).generate_state(count, np.uint64)
    return [int(d) >> 1 for d in draws]


class Threads:
    """Runs fn over items, one item per thread, with results in item order (serial with one thread)."""

    def __init__(self, count: int):
        self.count = count
        self.pool = ThreadPoolExecutor(count) if count > 1 else None

    def map(self, fn: Callable, items: Iterable[tuple]) -> list:
        if self.pool is None:
            return [fn(*it) for it in items]
        return [f.result() for f in [self.pool.submit(fn, *it) for it in items]]

    def on_each(self, fn: Callable, items: Sequence[tuple]) -> None:
        """fn over at most `count` items, each on its own worker thread: every item's thread waits at a
        barrier once its item is done, so no thread takes a second one."""
        if self.pool is None:
            for it in items:
                fn(*it)
            return
        barrier = threading.Barrier(len(items))

        def run(*it):
            try:
                fn(*it)
            finally:
                barrier.wait()

        self.map(run, items)
