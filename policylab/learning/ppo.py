"""The PPO update: clipped objective, value loss, entropy bonus, per-minibatch advantage normalisation,
gradient-norm clipping; each shard's chunk is differentiated on its own thread, gradients summed in shard order.

Adam steps one flat copy of the network's parameters (`Flat`), not each parameter tensor: the same
element-wise arithmetic, so the same bytes, in half the optimiser's time (measured: BENCHMARKS.md, "Adam on
one flat tensor")."""

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


class Flat:
    """The network's parameters as one flat tensor (`param`, with a flat `.grad`) and, for each
    parameter tensor, its view into both (`views`, `grads`). Why: torch's Adam costs a dozen small
    operations per tensor per step, and a learner's network has six to ten small tensors; on one flat
    tensor the same element-wise arithmetic gives the same bytes (tests/learning/test_ppo.py) in
    half the time. The network keeps its own tensors (what forward, backward, `state_dict` and the
    exports use); `publish` copies the stepped values back into them."""

    def __init__(self, net: Network):
        tensors = [q.detach() for q in net.parameters()]
        self.param = torch.nn.Parameter(torch.cat([t.reshape(-1) for t in tensors]))
        self.param.grad = torch.zeros_like(self.param)
        sizes = [t.numel() for t in tensors]
        self.views = [v.view(t.shape) for v, t in zip(self.param.detach().split(sizes), tensors)]
        self.grads = [v.view(t.shape) for v, t in zip(self.param.grad.split(sizes), tensors)]

    def gather(self, nets: list[Network]) -> None:
        """The flat gradient: each tensor's gradients summed over `nets` in order (as `torch.stack(..).sum(0)`)."""
        for out, *gs in zip(self.grads, *[[q.grad for q in net.parameters()] for net in nets]):
            if len(gs) > 1:
                torch.sum(torch.stack(gs), 0, out=out)
            else:
                out.copy_(gs[0])

    def clip(self, max_norm: float) -> None:
        """`torch.nn.utils.clip_grad_norm_` over the network's tensors: the norm of their norms (so the
        same bytes as clipping them one by one), then one scaling of the flat gradient."""
        total = torch.nn.utils.get_total_norm(self.grads)
        self.param.grad.mul_((max_norm / (total + 1e-6)).clamp(max=1.0))

    def publish(self, nets: list[Network]) -> None:
        """Copy the flat values into each network's own tensors."""
        with torch.no_grad():
            for net in nets:
                for q, v in zip(net.parameters(), self.views):
                    q.copy_(v)

    def load(self, net: Network) -> None:
        """Take the values of `net`'s tensors (after its `load_state_dict`)."""
        with torch.no_grad():
            for v, q in zip(self.views, net.parameters()):
                v.copy_(q)

    def opt_state(self, state: dict) -> dict:
        """A flat Adam's `state_dict` as the per-tensor Adam of the network would give it (the checkpoint's
        format, which predates `Flat`): each moment cut into the tensors' views, the step count each's."""
        flat = state["state"].get(0)
        per = {}
        if flat is not None:
            sizes = [v.numel() for v in self.views]
            moments = {k: [m.view(v.shape).clone() for m, v in zip(flat[k].split(sizes), self.views)] for k in MOMENTS}
            per = {i: {"step": flat["step"].clone(), **{k: moments[k][i] for k in MOMENTS}} for i in range(len(sizes))}
        groups = [{**g, "params": list(range(len(self.views)))} for g in state["param_groups"]]
        return {"state": per, "param_groups": groups}

    def flat_opt_state(self, state: dict) -> dict:
        """The inverse of `opt_state`: a checkpoint's per-tensor Adam state as the flat Adam's."""
        per = state["state"]
        flat = {}
        if per:
            flat = {
                0: {
                    "step": per[0]["step"].clone(),
                    **{k: torch.cat([per[i][k].reshape(-1) for i in sorted(per)]) for k in MOMENTS},
                }
            }
        groups = [{**g, "params": [0]} for g in state["param_groups"]]
        return {"state": flat, "param_groups": groups}


MOMENTS = ("exp_avg", "exp_avg_sq")  # Adam's per-element state


class PPO:
    """The optimiser's side of a learner: the network, one replica per shard, Adam (over `Flat`) and the
    generator of the minibatch permutations (seeded by `seed`)."""

    def __init__(self, net: Network, settings: Settings, threads: Threads, seed: int):
        self.s = settings
        self.threads = threads
        self.gen = torch.Generator().manual_seed(seed)
        self.net = net
        self.replicas = [net] + [copy.deepcopy(net) for _ in range(threads.count - 1)]
        self.flat = Flat(net)
        self.opt = torch.optim.Adam([self.flat.param], lr=settings.lr, eps=1e-5)

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
                self.flat.gather([part[0] for part in parts])  # in shard order
                self.flat.clip(s.max_grad_norm)
                self.opt.step()
                self.flat.publish(self.replicas)
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

    def opt_state(self) -> dict:
        """Adam's state in the checkpoint's per-tensor format (`Flat.opt_state`)."""
        return self.flat.opt_state(self.opt.state_dict())

    def load_state(self, net: dict, opt: dict, gen: torch.Tensor) -> None:
        for replica in self.replicas:
            replica.load_state_dict(net)
        self.flat.load(self.net)
        self.opt.load_state_dict(self.flat.flat_opt_state(opt))
        self.gen.set_state(gen)
