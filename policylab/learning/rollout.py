"""Rollout buffers: a rollout's samples as (T, n) columns, the actions sampled into them, and their
GAE advantages and returns."""

from __future__ import annotations

import torch

PER_SAMPLE = ("logp", "val", "rew", "end", "adv", "ret")  # float32 (T, n) columns besides obs and act
BATCH = ("obs", "act", "logp", "adv", "ret")  # what the PPO update reads


def buffers(steps: int, envs: int, dim: int, act_dim: int | None = None) -> dict[str, torch.Tensor]:
    """Empty (T, n) columns for one rollout (every one is written by the rollout and `gae`): discrete
    actions (int64) when `act_dim` is None, else float vectors of `act_dim`."""
    act = torch.empty((steps, envs), dtype=torch.int64) if act_dim is None else torch.empty((steps, envs, act_dim))
    return {"obs": torch.empty((steps, envs, dim)), "act": act, **{k: torch.empty((steps, envs)) for k in PER_SAMPLE}}


def columns(bufs: dict[str, torch.Tensor], lo: int, hi: int) -> dict[str, torch.Tensor]:
    """Envs lo..hi of every buffer, as views (a shard writes its own columns in place)."""
    return {k: v[:, lo:hi] for k, v in bufs.items()}


def flatten(bufs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The samples the update reads, (T * n, ...) in time-major order."""
    steps, envs = bufs["act"].shape[:2]
    return {k: bufs[k].reshape(steps * envs, *bufs[k].shape[2:]) for k in BATCH}


def sample(logits: torch.Tensor, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """One action per row drawn from softmax(logits), and its log-probability. An inverse-CDF draw:
    one uniform per row (a tenth of torch.multinomial's time at 2,048 rows)."""
    logp_all = torch.log_softmax(logits, dim=1)
    u = torch.rand(logits.shape[0], generator=gen)
    action = (u[:, None] >= logp_all.exp().cumsum(1)[:, :-1]).sum(1)
    return action, logp_all.gather(1, action[:, None]).squeeze(1)


def gae(bufs: dict[str, torch.Tensor], next_value: torch.Tensor, gamma: float, lam: float) -> None:
    """Fill `adv` and `ret` from `rew`, `val` and `end` (1 where a sample ends the credited return:
    no bootstrap past it). `next_value` is the value of the observation after the last step."""
    steps = bufs["rew"].shape[0]
    next_v = next_value
    adv = torch.zeros_like(next_v)
    for t in reversed(range(steps)):
        keep = 1.0 - bufs["end"][t]
        delta = bufs["rew"][t] + gamma * next_v * keep - bufs["val"][t]
        adv = delta + gamma * lam * keep * adv
        bufs["adv"][t] = adv
        next_v = bufs["val"][t]
    bufs["ret"].copy_(bufs["adv"] + bufs["val"])
