"""The learner's loop, shared by every study that learns: shards play rollouts, PPO updates on them.

A study's shard gives ``play(net, bufs) -> (returns, lengths, extras)``, ``state()``, ``load_state(state)``,
``started`` and ``progress``; curves, checkpoints and timings: docs/design.md, "Module notes"."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch

from policylab.errors import BadInput
from policylab.fileio import write_json
from policylab.learning import checkpoint, rollout, shards
from policylab.learning.ppo import PPO, STATS
from policylab.progress import progress_bar, say

CHECKPOINT = "checkpoint.pt"
TIMING = "timing.json"
CURVES = ("agent_steps", "episodes", "return_mean", "length_mean", *STATS)


class Learner:
    """The whole training state; `update()` plays one rollout on every shard (in parallel) and runs one
    PPO update on it, with the learning rate annealed linearly to zero over `updates`."""

    def __init__(
        self,
        ppo: PPO,
        shard_list: Sequence,
        sizes: Sequence[int],
        steps: int,
        dim: int,
        act_dim: int | None,
        updates: int,
        extras: Sequence[str] = (),
    ):
        self.ppo = ppo
        self.shards = list(shard_list)
        self.cols = np.cumsum([0, *sizes])
        self.steps, self.dim, self.act_dim, self.updates = steps, dim, act_dim, updates
        self.done = 0
        self.curves: dict[str, list] = {k: [] for k in (*CURVES, *extras)}
        self.extras = tuple(extras)

    @property
    def net(self):
        return self.ppo.net

    @property
    def episodes(self) -> int:
        """Episodes started, the first of every env included."""
        return sum(sh.started for sh in self.shards)

    def rollout(self) -> tuple[dict[str, torch.Tensor], list[float], list[int], dict]:
        """Every shard plays its rollout (in parallel); the samples flattened, the finished episodes and
        the extras summed over the shards."""
        bufs = rollout.buffers(self.steps, int(self.cols[-1]), self.dim, self.act_dim)
        views = [rollout.columns(bufs, a, b) for a, b in zip(self.cols[:-1], self.cols[1:])]
        for sh in self.shards:
            sh.progress = self.done / self.updates
        played = self.ppo.threads.map(lambda sh, v: sh.play(self.net, v), list(zip(self.shards, views)))
        returns = [r for rs, _, _ in played for r in rs]
        lengths = [x for _, ls, _ in played for x in ls]
        extras: dict = {}
        for _, _, ex in played:
            for k, (s, n) in ex.items():
                a, b = extras.get(k, (0.0, 0))
                extras[k] = (a + s, b + n)
        return rollout.flatten(bufs), returns, lengths, extras

    def update(self) -> None:
        self.ppo.anneal(1.0 - self.done / self.updates)
        batch, returns, lengths, extras = self.rollout()
        sums, count = self.ppo.update(batch)
        if not torch.isfinite(sums).all():
            raise BadInput("lr", f"training diverged at update {self.done + 1} (non-finite loss); try a smaller --lr")
        self.done += 1
        c = self.curves
        c["agent_steps"].append(self.done * batch["act"].shape[0])
        c["episodes"].append(len(returns))
        c["return_mean"].append(float(np.mean(returns)) if returns else None)  # None: no episode ended
        c["length_mean"].append(float(np.mean(lengths)) if lengths else None)
        for k, v in zip(STATS, (sums / count).tolist()):
            c[k].append(v)
        for k in self.extras:
            s, n = extras.get(k, (0.0, 0))
            c[k].append(float(s / n) if n else None)

    def state(self) -> dict:
        return {
            "done": self.done,
            "net": self.net.state_dict(),
            "opt": self.ppo.opt_state(),
            "gen": self.ppo.gen.get_state(),
            "shards": [sh.state() for sh in self.shards],
            "curves": self.curves,
        }

    def load_state(self, s: dict) -> None:
        self.done = s["done"]
        self.ppo.load_state(s["net"], s["opt"], s["gen"])
        for sh, st in zip(self.shards, s["shards"]):
            sh.load_state(st)
        self.curves = s["curves"]
        self.ppo.settle_threads(self.dim, self.act_dim)


def train(
    learner: Learner,
    out: Path,
    checkpoint_every: int,
    label: str,
    status: Callable[[Learner], str],
    stop_after: int | None = None,
) -> Learner:
    """Run (or resume from OUT/checkpoint.pt) `learner` to the end of its updates, with a progress bar
    (`label`, and `status(learner)` after each update); `stop_after` stops once that many updates are
    done (as a kill would, after its last checkpoint: the kill tests' hook)."""
    ckpt = out / CHECKPOINT
    timing_path = out / TIMING
    timing = {"updates": [], "steps_per_s": [], "cpu_s": []}
    if ckpt.is_file():
        learner.load_state(checkpoint.read(ckpt))
        if timing_path.is_file():
            saved = json.loads(timing_path.read_text())
            saved.setdefault("cpu_s", [None] * len(saved["updates"]))  # timed before CPU-seconds were kept
            keep = [i for i, u in enumerate(saved["updates"]) if u <= learner.done]
            timing = {k: [v[i] for i in keep] for k, v in saved.items()}
        say(f"resuming from update {learner.done} of {learner.updates} ({ckpt})")
    per_update = int(learner.cols[-1]) * learner.steps
    with progress_bar(label, learner.updates * per_update, unit="steps") as bar:
        bar.already(learner.done * per_update)
        while learner.done < learner.updates:
            if stop_after is not None and learner.done >= stop_after:
                break
            t0, c0 = time.perf_counter(), time.process_time()
            learner.update()
            timing["updates"].append(learner.done)
            timing["steps_per_s"].append(per_update / (time.perf_counter() - t0))
            timing["cpu_s"].append(time.process_time() - c0)
            bar.status(status(learner))
            bar.advance(per_update)
            if learner.done % checkpoint_every == 0 or learner.done == learner.updates:
                checkpoint.write(ckpt, learner.state())
                write_json(timing_path, timing)
    return learner


def check_sizes(threads: int, envs: int, rollout: int, minibatch: int, steps: int, what: str = "envs") -> int:
    """The number of updates of a budget, after the checks every learner's sizes must pass (`BadInput`
    naming the option otherwise): a thread per shard needs an env, a minibatch fits in one update's
    samples, and the budget holds one update at least. `what` names the envs in the messages."""
    if threads > envs:
        raise BadInput("threads", f"{threads} threads need at least as many {what} (--envs {envs})")
    batch = envs * rollout
    if minibatch > batch:
        raise BadInput("minibatch", f"{minibatch:,} is more than one update's samples (--envs x --rollout = {batch:,})")
    if steps < batch:
        raise BadInput("steps", f"{steps:,} is less than one update (--envs x --rollout = {batch:,})")
    return steps // batch


def episode_seeds(seeds, started: int, k: int, index: int, count: int) -> np.ndarray:
    """The seeds of the next `k` episodes of shard `index` of `count` that has started `started`: its
    j-th episode plays seed j * count + index of the named range `seeds`, so shards never share one and
    need no lock to hand them out; `BadInput` when the range runs out."""
    idx = (started + np.arange(k, dtype=np.int64)) * count + index
    if k and idx[-1] >= seeds.size:
        raise BadInput("steps", f"the run needs more than the {seeds.size:,} seeds of {seeds.study}.{seeds.purpose}")
    return seeds.base + idx


def shard_layout(envs: int, threads: int, seed: int) -> tuple[list[int], list[int]]:
    """Envs per shard and each shard's sampling-generator seed."""
    return shards.sizes(envs, threads), shards.seeds(seed, threads)
