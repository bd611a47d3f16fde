"""The PPO update: clipped objective, value loss, entropy bonus, per-minibatch advantage normalisation,
gradient-norm clipping; each shard's chunk is differentiated on its own thread, gradients summed in shard order."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from policylab.learning.network import ActorCritic, GaussianActorCritic
from policylab.learning.options import SETTINGS
from policylab.learning.shards import Threads

Network = ActorCritic | GaussianActorCritic  # anything with `evaluate(obs, act) -> (logp, entropy, value)`
STATS = ("policy_loss", "value_loss", "entropy", "clip_fraction", "approx_kl")


@dataclass(frozen=True)
class Settings:
    lr: float  # Adam's learning rate before annealing
    epochs: int  # passes over each rollout
    minibatch: int  # samples per gradient step
    clip: float  # clip range of the probability ratio
    ent_coef: float
    vf_coef: float
    max_grad_norm: float

    @classmethod
    def of(cls, request) -> Settings:
        """The settings a learn request's PPO options give (`options.SETTINGS`, declared in `options`)."""
        return cls(**{name: getattr(request, name) for name in SETTINGS})


class PPO:
    """The optimiser's side of a learner: the network, one replica per shard, Adam and the generator
    of the minibatch permutations (seeded by `seed`)."""

    def __init__(self, net: Network, settings: Settings, threads: Threads, seed: int):
        self.s = settings
        self.threads = threads
        self.gen = torch.Generator().manual_seed(seed)
        self.net = net
        self.replicas = [net] + [copy.deepcopy(net) for _ in range(threads.count - 1)]
        self.opt = torch.optim.Adam(net.parameters(), lr=settings.lr, eps=1e-5)

    def anneal(self, frac: float) -> None:
        """Set the learning rate to `frac` of its initial value."""
        for g in self.opt.param_groups:
            g["lr"] = self.s.lr * frac

    def chunk_grad(self, net: Network, batch: dict, idx: torch.Tensor, adv: torch.Tensor, total: int) -> torch.Tensor:
        """Backward of one chunk's share of the minibatch loss on `net`; the chunk's sums of the stats."""
        s = self.s
        logp, entropy, value = net.evaluate(batch["obs"][idx], batch["act"][idx])
        entropy = entropy.sum()
        log_ratio = logp - batch["logp"][idx]
        ratio = log_ratio.exp()
        pg = -torch.min(ratio * adv, ratio.clamp(1 - s.clip, 1 + s.clip) * adv).sum()
        vloss = 0.5 * (value - batch["ret"][idx]).square().sum()
        net.zero_grad(set_to_none=True)
        ((pg + s.vf_coef * vloss - s.ent_coef * entropy) / total).backward()
        with torch.no_grad():
            clipped = ((ratio - 1).abs() > s.clip).float().sum()
            kl = ((ratio - 1) - log_ratio).sum()
            return torch.stack([pg, vloss, entropy, clipped, kl]).detach()

    def update(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, int]:
        """`epochs` passes of whole minibatches over `batch` (`rollout.flatten`); the per-sample means
        of the STATS summed over the gradient steps (float64), and the number of steps."""
        s = self.s
        size = batch["act"].shape[0]
        mb, n = s.minibatch, len(self.replicas)
        cuts = [mb * k // n for k in range(n + 1)]
        sums = torch.zeros(len(STATS), dtype=torch.float64)
        count = 0
        for _ in range(s.epochs):
            order = torch.randperm(size, generator=self.gen)
            for lo in range(0, size - mb + 1, mb):
                idx = order[lo : lo + mb]
                adv = batch["adv"][idx]
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)  # over the whole minibatch
                parts = [
                    (net, batch, idx[a:b], adv[a:b], mb) for net, a, b in zip(self.replicas, cuts, cuts[1:]) if b > a
                ]
                stats = self.threads.map(self.chunk_grad, parts)
                grads = [[q.grad for q in part[0].parameters()] for part in parts]
                for q, *gs in zip(self.net.parameters(), *grads):
                    q.grad = torch.stack(gs).sum(0) if len(gs) > 1 else gs[0]  # in shard order
                torch.nn.utils.clip_grad_norm_(self.net.parameters(), s.max_grad_norm)
                self.opt.step()
                with torch.no_grad():
                    for rep in self.replicas[1:]:
                        for q, m in zip(rep.parameters(), self.net.parameters()):
                            q.copy_(m)
                sums += torch.stack(stats).sum(0).double() / mb
                count += 1
        return sums, count

    def settle_threads(self, dim: int, act_dim: int | None) -> None:
        """Leave every shard's thread as an update leaves it: one backward pass each, on a zero chunk of
        a minibatch, its gradients dropped (nothing learned changes). Why: MKL keeps per-thread state
        from its last call that can change the last bit of the next small product (measured: after a
        resume, the first value forward of a 6-env shard differed by 1 ulp in one row, and not after
        this); an uninterrupted run's threads last ran a backward before each rollout, so a resumed
        run replays one before its first and continues to the same bytes."""
        mb, n = self.s.minibatch, len(self.replicas)
        cuts = [mb * k // n for k in range(n + 1)]
        act = torch.zeros(mb, dtype=torch.int64) if act_dim is None else torch.zeros(mb, act_dim)
        zero = {"obs": torch.zeros(mb, dim), "act": act, "logp": torch.zeros(mb), "ret": torch.zeros(mb)}
        idx, adv = torch.arange(mb), torch.zeros(mb)
        self.threads.map(
            self.chunk_grad,
            [(net, zero, idx[a:b], adv[a:b], mb) for net, a, b in zip(self.replicas, cuts, cuts[1:]) if b > a],
        )
        for net in self.replicas:
            net.zero_grad(set_to_none=True)

    def load_state(self, net: dict, opt: dict, gen: torch.Tensor) -> None:
        for replica in self.replicas:
            replica.load_state_dict(net)
        self.opt.load_state_dict(opt)
        self.gen.set_state(gen)
