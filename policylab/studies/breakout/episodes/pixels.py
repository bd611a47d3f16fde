"""Pixel (CNN) agents' episodes: a network on Atari's preprocessed frames, on the exact shadow or on ALE.

The serve rule reads rewards and `info["lives"]` (no RAM); payloads and why a loop of its own: docs/breakout.md,
"Module notes"."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from policylab.envs.breakout.contract import FIRE, NOOP
from policylab.studies.breakout.episodes.features import RAM_FIELDS

PIXEL_RULES = "atari_vector_v1"  # the protocol record's `agent_env`: these envs, this serve rule (a key part)


def pixel_features(reward: np.ndarray, lives: np.ndarray, done: bool) -> dict:
    """The outcome row of a pixel episode (`features.episode_features`' fields; the RAM ones None)."""
    reward = np.asarray(reward, dtype=np.float64)
    rewarded = np.nonzero(reward > 0)[0]
    return {
        "score": float(reward.sum()),
        "steps": int(reward.size),
        "done": bool(done),
        "reward_count": int(rewarded.size),
        "first_reward_step": int(rewarded[0]) + 1 if rewarded.size else None,
        **dict.fromkeys(RAM_FIELDS),
        "lives_start": int(lives[0]),
        "lives_end": int(lives[-1]),
    }


def serve(actions: np.ndarray, first: bool, lost: np.ndarray, rule: str) -> np.ndarray:
    """The serve rule on a batch of policy actions (docs/breakout.md, "Module notes"): `first` is the episode's first
    agent step, `lost` whether each env lost a life at the step before."""
    if rule == "auto":
        return np.where(lost | first, FIRE, actions)
    return np.full_like(actions, FIRE) if first else np.where(actions == FIRE, NOOP, actions)


def shadow_env(spec, sticky: float, n: int, max_steps: int):
    """The exact shadow's vector env of a pixel spec: full games, unclipped rewards, `max_steps` agent steps."""
    from policylab.envs.breakout.vector import BreakoutVectorEnv

    return BreakoutVectorEnv(
        n,
        repeat_action_probability=float(sticky),
        max_num_frames_per_episode=max_steps * spec.frameskip,
        reward_clipping=False,
        **spec.env_kwargs(),
    )


def ale_env(spec, sticky: float, n: int, max_steps: int):
    """ale-py's `AtariVectorEnv` with the same settings as `shadow_env` (one worker thread)."""
    import ale_py

    return ale_py.AtariVectorEnv(
        "breakout",
        num_envs=n,
        num_threads=1,
        repeat_action_probability=float(sticky),
        max_num_frames_per_episode=max_steps * spec.frameskip,
        reward_clipping=False,
        **spec.env_kwargs(),
    )


def play(env, seeds: Sequence[int], act, max_steps: int, rule: str) -> list[tuple[dict, dict]]:
    """Play one episode per seed in `env` (a vector env of len(seeds) games, NextStep autoreset), env i
    reset with seeds[i]; `act(obs)` gives the policy's actions for a batch of observations. Returns
    (outcome, payload) per seed."""
    n = len(seeds)
    if n == 1:
        obs, info = env.reset(seed=int(seeds[0]))
    else:
        obs, info = env.reset(seed=np.asarray(seeds, dtype=np.int64))
    lives = np.zeros((max_steps + 1, n), dtype=np.int8)
    lives[0] = info["lives"]
    acts = np.zeros((max_steps, n), dtype=np.int8)
    pol = np.zeros((max_steps, n), dtype=np.int8)
    rewards = np.zeros((max_steps, n), dtype=np.float32)
    length = np.full(n, max_steps, dtype=np.int64)
    finished = np.zeros(n, dtype=bool)
    ended = np.zeros(n, dtype=bool)  # terminated: the game is over (not a truncation)
    lost = np.zeros(n, dtype=bool)
    for t in range(max_steps):
        live = np.flatnonzero(~finished)
        a_pol = np.zeros(n, dtype=np.int64)
        a_pol[live] = act(obs[live])
        a = serve(a_pol, t == 0, lost, rule)
        a[finished] = NOOP
        obs, r, term, trunc, info = env.step(a.astype(np.int64))
        acts[t, live], pol[t, live], rewards[t, live] = a[live], a_pol[live], r[live]
        lives[t + 1, live] = info["lives"][live]
        lost = info["lives"] < lives[t]
        newly = ~finished & (term | trunc)
        length[newly] = t + 1
        ended |= newly & term
        finished |= newly
        if finished.all():
            break
    out = []
    for i in range(n):
        k = int(length[i])
        payload = {
            "action": np.ascontiguousarray(acts[:k, i]),
            "policy_action": np.ascontiguousarray(pol[:k, i]),
            "reward": np.ascontiguousarray(rewards[:k, i]),
            "lives": np.ascontiguousarray(lives[: k + 1, i]),
        }
        out.append((pixel_features(payload["reward"], payload["lives"], bool(ended[i])), payload))
    return out


def run_group(tasks) -> list[list[tuple[int, dict, dict]]]:
    """Play the seeds of pixel-network tasks (one env, one network, one protocol): a shadow group in one
    `BreakoutVectorEnv` batch, ALE seeds one `AtariVectorEnv` game each. Returns (seed, outcome, payload)
    per seed, per task (the runner makes them `Episode`s)."""
    from policylab.envs.breakout.ale import Protocol

    head = tasks[0]
    protocol = Protocol(**head.protocol)
    policy = head.network.policy()
    seeds = [int(s) for t in tasks for s in t.seeds]
    if head.env == "shadow":
        env = shadow_env(policy.spec, head.shadow.sticky_prob, len(seeds), protocol.max_steps)
        results = play(env, seeds, policy.act, protocol.max_steps, protocol.serve)
    else:
        results = []
        for s in seeds:
            env = ale_env(policy.spec, protocol.sticky, 1, protocol.max_steps)
            results += play(env, [s], policy.act, protocol.max_steps, protocol.serve)
            env.close()
    out, i = [], 0
    for task in tasks:
        out.append([(int(s), *results[i + j]) for j, s in enumerate(task.seeds)])
        i += len(task.seeds)
    return out
