"""CleanRL-style PPO on the Breakout vector env: ale-py's AtariVectorEnv code, one id changed.

    python examples/ppo_breakout_vector.py [total_env_steps]
"""
import sys

import gymnasium as gym
import torch
import torch.nn as nn

import policylab  # noqa: F401  (registers policylab/Breakout-v5)

N, T, TOTAL = 8, 64, int(sys.argv[1]) if len(sys.argv) > 1 else 4096
envs = gym.make_vec("policylab/Breakout-v5", num_envs=N, vectorization_mode="vector_entry_point")
torch.manual_seed(0)
body = nn.Sequential(nn.Conv2d(4, 16, 8, 4), nn.ReLU(), nn.Conv2d(16, 32, 4, 2), nn.ReLU(), nn.Flatten(),
                     nn.Linear(2592, 256), nn.ReLU())
pi, v = nn.Linear(256, 4), nn.Linear(256, 1)
opt = torch.optim.Adam([*body.parameters(), *pi.parameters(), *v.parameters()], lr=2.5e-4)
obs, _ = envs.reset(seed=0)
for update in range(TOTAL // (N * T)):
    buf = []
    for _ in range(T):  # rollout
        x = torch.as_tensor(obs, dtype=torch.float32) / 255
        with torch.no_grad():
            h = body(x)
            dist = torch.distributions.Categorical(logits=pi(h))
            a = dist.sample()
            val = v(h).squeeze(1)
        obs, r, term, trunc, _ = envs.step(a.numpy())
        buf.append((x, a, dist.log_prob(a), val, torch.as_tensor(r, dtype=torch.float32),
                    torch.as_tensor(term | trunc, dtype=torch.float32)))
    x, a, logp, val, rew, done = (torch.stack(z) for z in zip(*buf))
    adv, last = torch.zeros_like(rew), torch.zeros(N)  # GAE(0.99, 0.95), bootstrap 0 at the rollout's end
    for t in reversed(range(T)):
        nxt = val[t + 1] if t + 1 < T else torch.zeros(N)
        last = rew[t] + 0.99 * nxt * (1 - done[t]) - val[t] + 0.99 * 0.95 * (1 - done[t]) * last
        adv[t] = last
    ret = adv + val
    for _ in range(2):  # clipped PPO epochs on the whole batch
        h = body(x.flatten(0, 1))
        dist = torch.distributions.Categorical(logits=pi(h))
        ratio = (dist.log_prob(a.flatten()) - logp.flatten()).exp()
        A = adv.flatten()
        A = (A - A.mean()) / (A.std() + 1e-8)
        loss = (-torch.min(ratio * A, ratio.clamp(0.9, 1.1) * A).mean()
                + 0.5 * (v(h).squeeze(1) - ret.flatten()).pow(2).mean() - 0.01 * dist.entropy().mean())
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"update {update}: loss {loss.item():.4f}, mean reward per step {rew.mean().item():.4f}")
