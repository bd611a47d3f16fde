"""CleanRL-style PPO on the Breakout vector env: ale-py's AtariVectorEnv code, one id changed.

    python examples/ppo_breakout_vector.py [total_env_steps]
"""
import sys

import gymnasium as gym
import torch
from torch import nn
from torch.distributions import Categorical

import policylab  # noqa: F401  (registers policylab/Breakout-v5)

N, T, TOTAL = 8, 64, int(sys.argv[1]) if len(sys.argv) > 1 else 4096
envs = gym.make_vec("policylab/Breakout-v5", num_envs=N, vectorization_mode="vector_entry_point")
torch.manual_seed(0)
net = nn.Sequential(nn.Conv2d(4, 16, 8, 4), nn.ReLU(), nn.Conv2d(16, 32, 4, 2), nn.ReLU(), nn.Flatten(),
                    nn.Linear(2592, 256), nn.ReLU(), nn.Linear(256, 5))  # 4 action logits, then the value
opt = torch.optim.Adam(net.parameters(), lr=2.5e-4)
obs, _ = envs.reset(seed=0)
for update in range(TOTAL // (N * T)):
    batch = []
    for _ in range(T):  # rollout: observation, action, its log-probability, value, reward, episode end
        x = torch.as_tensor(obs, dtype=torch.float32) / 255
        with torch.no_grad():
            out = net(x)
        dist = Categorical(logits=out[:, :4])
        a = dist.sample()
        obs, r, term, trunc, _ = envs.step(a.numpy())
        batch.append((x, a, dist.log_prob(a), out[:, 4], torch.tensor(r), torch.tensor(term | trunc)))
    x, a, logp, val, rew, done = (torch.stack(z) for z in zip(*batch))
    adv, gae, keep = torch.zeros(T, N), torch.zeros(N), 1.0 - done.float()
    for t in reversed(range(T)):  # GAE(0.99, 0.95), the value after the rollout's end taken as 0
        gae = rew[t] + 0.99 * keep[t] * (val[t + 1] if t + 1 < T else 0) - val[t] + 0.99 * 0.95 * keep[t] * gae
        adv[t] = gae
    for _ in range(2):  # two epochs of the clipped objective on the whole batch
        out = net(x.flatten(0, 1))
        dist, A = Categorical(logits=out[:, :4]), ((adv - adv.mean()) / (adv.std() + 1e-8)).flatten()
        ratio = (dist.log_prob(a.flatten()) - logp.flatten()).exp()
        loss = (-torch.min(ratio * A, ratio.clamp(0.9, 1.1) * A).mean() - 0.01 * dist.entropy().mean()
                + 0.5 * (out[:, 4] - (adv + val).flatten()).pow(2).mean())
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"update {update}: loss {loss.item():.4f}, mean reward per step {rew.float().mean().item():.4f}")
