"""The Go1 learner's shards: each plays its `TrainingWorlds` into its columns of the rollout buffers
with the Gaussian actor-critic (`policylab.learning`), on its own thread."""

from __future__ import annotations

import numpy as np
import torch

from policylab.learning import rollout
from policylab.learning.learner import episode_seeds
from policylab.learning.network import GaussianActorCritic
from policylab.rollout.seeds import named_range
from policylab.studies.boundary.learn.worlds import PRIVILEGED, TrainingWorlds

EXTRAS = ("forward_speed", "fall_rate", "tracking_error")


class Shard:
    """One thread's worlds, sampling generator and episode bookkeeping. Shard k of S starts its j-th
    episode on seed index j * S + k of ``boundary.learn``, so shards never share a seed."""

    def __init__(
        self, rob, recipe, index: int, count: int, n_envs: int, gen_seed: int, steps: int, gamma: float, lam: float
    ):
        self.index, self.count, self.steps, self.gamma, self.lam = index, count, steps, gamma, lam
        self.seeds = named_range("boundary", "learn")
        self.started = 0
        self.progress = 0.0  # the learner's share of updates done, set before each rollout
        self.worlds = TrainingWorlds(rob, recipe, n_envs, self._fresh)
        self.gen = torch.Generator().manual_seed(gen_seed)
        self.obs = self._full(self.worlds.observe())
        self.ep_return = np.zeros(n_envs)
        self.ep_length = np.zeros(n_envs, dtype=np.int64)

    def _fresh(self, k: int) -> np.ndarray:
        seeds = episode_seeds(self.seeds, self.started, k, self.index, self.count)
        self.started += k
        return seeds

    def _full(self, obs: np.ndarray, rows=slice(None)) -> np.ndarray:
        """The policy's observation with the critic's privileged values after it, in the network's float32."""
        return np.concatenate([obs, self.worlds.privileged()[rows]], axis=1).astype(np.float32)

    def play(self, net: GaussianActorCritic, bufs: dict[str, torch.Tensor]) -> tuple[list, list, dict]:
        w = self.worlds
        returns, lengths = [], []
        speed, falls, err = 0.0, 0, 0.0
        w.push_scale, w.anchor = w.recipe.push_scale(self.progress), w.recipe.anchor(self.progress)
        with torch.no_grad():
            for t in range(self.steps):
                x = net.normalise(self.obs, out=bufs["obs"][t])
                mean, value = net(x)
                action, logp = net.sample(mean, self.gen)
                bufs["act"][t], bufs["val"][t], bufs["logp"][t] = action, value, logp
                cmd = w.cmd[:, :2].copy()  # the command this step follows (a redraw shows in `nxt`)
                nxt, rew, fell, trunc = w.step(action.numpy().astype(np.float64))
                speed += float(nxt[:, 0].sum())
                err += float(np.hypot(*(nxt[:, :2] - cmd).T).sum())
                self.ep_return += rew
                self.ep_length += 1
                r = torch.from_numpy(rew.astype(np.float32))
                self.obs = self._full(nxt)
                if trunc.any():  # the episode's length is not the robot's end: bootstrap with the value there
                    r[torch.from_numpy(trunc)] += self.gamma * net(net.normalise(self.obs[trunc]))[1]
                ended = fell | trunc
                bufs["rew"][t] = r
                bufs["end"][t] = torch.from_numpy(ended.astype(np.float32))
                if ended.any():
                    rows = np.flatnonzero(ended)
                    returns += self.ep_return[rows].tolist()
                    lengths += self.ep_length[rows].tolist()
                    falls += int(fell.sum())
                    self.ep_return[rows] = 0
                    self.ep_length[rows] = 0
                    w.reset(rows)
                    self.obs[rows] = self._full(w.observe(rows), rows)
            next_v = net(net.normalise(self.obs))[1]
        rollout.gae(bufs, next_v, self.gamma, self.lam)
        n = self.steps * len(self.obs)
        return (
            returns,
            lengths,
            {"forward_speed": (speed, n), "fall_rate": (falls, len(returns)), "tracking_error": (err, n)},
        )

    STATE = ("started", "obs", "ep_return", "ep_length")

    def state(self) -> dict:
        s = {k: np.copy(getattr(self, k)) for k in self.STATE}
        return {**s, "worlds": self.worlds.state(), "gen": self.gen.get_state()}

    def load_state(self, s: dict) -> None:
        self.started = int(s["started"])
        for k in self.STATE[1:]:
            getattr(self, k)[...] = s[k]
        self.worlds.load_state(s["worlds"])
        self.gen.set_state(s["gen"])


def input_affine() -> tuple[np.ndarray, np.ndarray]:
    """(shift, scale) of the 48 go1_imu observation values and the privileged ones: velocities and
    joint speeds scaled to about unit size, friction and height centred."""
    scale = np.concatenate(
        [
            np.full(3, 1.0),
            np.full(3, 0.25),
            np.full(3, 1.0),
            np.full(12, 1.0),
            np.full(12, 0.05),
            np.full(12, 1.0),
            np.full(3, 1.0),
            [2.0, 1.0, 1.0, 10.0],
        ]
    )
    shift = np.zeros(48 + len(PRIVILEGED))
    shift[48], shift[51] = 0.7, 0.28
    return shift.astype(np.float32), scale.astype(np.float32)
