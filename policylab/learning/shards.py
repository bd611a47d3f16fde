"""How a learner spreads its envs over threads: S shards, shard k always on thread k, torch single-threaded
(why: docs/design.md, "Where policylab departs from the starting design")."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

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
    """Runs fn over items, item k on thread k, with results in item order.

    Each learner has threads of its own, created with it, and item k (shard k, replica k) always runs
    on thread k, whatever the timing: MKL keeps per-thread state from its last call that can change
    the last bit of the next small product (`ppo.PPO.settle_threads`), so the bytes of a run depend
    on which thread ran what (measured: the six-env-shard run of the resume test with every item on
    one thread ends with other bytes than spread over its two). A shared pool handed each item to
    whichever thread was free, so under load one thread could take both shards' chunks, and a
    single-threaded learner ran on the caller's thread, whose last call was whatever ran before in
    the process."""

    def __init__(self, count: int):
        self.count = count
        self.pools = [ThreadPoolExecutor(1, thread_name_prefix=f"shard{k}") for k in range(count)]

    def map(self, fn: Callable, items: Sequence[tuple]) -> list:
        """fn over at most `count` items, item k on thread k."""
        if len(items) > self.count:
            raise ValueError(f"{len(items)} items for {self.count} threads")
        return [f.result() for f in [pool.submit(fn, *it) for pool, it in zip(self.pools, items)]]
