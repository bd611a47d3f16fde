"""`policylab breakout learn`: PPO in the vectorized shadow, then the learned network judged on ALE.

Why a learner here: a nine-parameter tracker cannot exploit the shadow much, a network can, so
whether a policy *learned* in the shadow holds on ALE is the real test of the shadow (issue 14).

The learner is PPO (clipped objective, GAE, a value head, an entropy bonus, per-minibatch advantage
normalisation, global gradient-norm clipping, linearly annealed learning rate) written here on
torch's CPU build. The network is an MLP (relu by default, tanh on request) with one shared trunk
and a head of 3 action logits plus the value. It sees the network observation of
`policies.breakout_net` (scaled contract features, optionally their history, and the 6 x 18 wall),
so the same file plays on ALE.

The defaults are chosen for wall-clock learning on 2 cores, not per sample: 2,048 envs, one epoch of
2,048-sample minibatches per 131,072-sample rollout and a learning rate of 2.5e-3. Measured here
(docs/breakout.md): the first recipe (512 envs, 4 epochs) learned more per sample but ran at a
fifth of the speed, and the ALE score after a 10-minute budget is what a user gets.

FIRE is masked: the exported file's FIRE logit is a constant -1e4 (so its probability is exactly 0
in float32 and greedy play never picks it); training samples and scores the 3 legal logits alone.
While a ball is in play FIRE does what NOOP does; while none is, the protocol's serve rule (auto)
FIREs for every policy, in training exactly as in evaluation, so the network never needs it.

Life loss ends the credited return (as Atari PPO's usual episodic-life wrapper does): at a lost ball
the advantage does not bootstrap past it, so the value of keeping the ball alive is learned from
the first rollouts instead of the scarce brick rewards alone. The env plays on with its remaining
lives; the reported episode is the whole game.

Episodes: every env plays until game over or the protocol's horizon (`max_steps`, a truncation:
the return is bootstrapped with the value of the last observation) and is then reset at once on a
fresh seed from the named range ``breakout.learn`` (shard k of S starts its j-th episode on index
j * S + k), so no training seed is ever reused or shared with ALE's.

Determinism: torch.manual_seed(--seed) draws the initial weights, one generator seeded by --seed
every minibatch permutation, and one generator per shard (seeded from --seed and the shard) its
sampled actions; torch runs single-threaded per shard with `use_deterministic_algorithms`. The
same config on the same --threads writes the same checkpoint and ONNX bytes.

Checkpoints: every --checkpoint-every updates the whole state (network, optimizer, the generators,
each shard's env arrays, observer history, lives and episode counter, curves) is written atomically
to OUT/checkpoint.pt; rerunning the command after a kill resumes from it and ends with the bytes of
an uninterrupted run.
Wall-clock timings (steps/s) are not part of that state: they go to OUT/timing.json.
"""

from __future__ import annotations

import copy
import io
import json
import shlex
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from policylab.config import claim_out_dir, validated
from policylab.envs.breakout_ale import Protocol
from policylab.envs.breakout_contract import FEATURES, FIRE, LEFT, N_FEATURES, NOOP, RIGHT
from policylab.envs.breakout_shadow import ShadowBreakout
from policylab.envs.breakout_shadow_params import ShadowParams
from policylab.errors import BadInput
from policylab.fileio import atomic_write_bytes, write_json
from policylab.policies.breakout_net import N_ACTIONS, WALL_COLS, WALL_ROWS, NetObserver, NetObsSpec, export_onnx
from policylab.progress import progress_bar, say
from policylab.rollout.seeds import named_range
from policylab.studies.breakout import options
from policylab.studies.breakout.requests import LearnRequest
from policylab.studies.breakout.runner import serve_actions

LEGAL = (NOOP, RIGHT, LEFT)  # the logits the network learns; FIRE's is FIRE_LOGIT
LEGAL_ACTIONS = np.array(LEGAL, dtype=np.int64)  # a sampled index -> the env's action
# Hidden-layer activations the learner offers (both export as ONNX Relu/Tanh). relu is the default for
# speed: torch's CPU tanh costs as much as the 117 x 64 first layer (measured: 690 us against 27 us for
# relu on 8,192 x 64, 2 threads).
ACTIVATIONS = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}
FIRE_LOGIT = -1e4
IN_PLAY = FEATURES.index("ball_in_play")
LIVES = FEATURES.index("lives")
CHECKPOINT = "checkpoint.pt"
TIMING = "timing.json"
RUN_ONLY = ("out",)  # where a run goes, never what it learns


class ActorCritic(torch.nn.Module):
    """Shared trunk (relu or tanh); head = 3 legal-action logits + value. The exported file gives 4
    logits (FIRE's a constant, `layers`)."""

    def __init__(self, spec: NetObsSpec, hidden: int, layers: int, activation: str):
        super().__init__()
        self.activation = activation
        shift, scale = input_affine(spec)
        self.register_buffer("shift", torch.from_numpy(shift))
        self.register_buffer("scale", torch.from_numpy(scale))
        mods: list[torch.nn.Module] = []
        width = spec.dim
        for _ in range(layers):
            mods += [torch.nn.Linear(width, hidden), ACTIVATIONS[activation]()]
            width = hidden
        self.trunk = torch.nn.Sequential(*mods)
        self.head = torch.nn.Linear(width, len(LEGAL) + 1)
        for m in self.trunk:
            if isinstance(m, torch.nn.Linear):
                torch.nn.init.orthogonal_(m.weight, gain=2 ** 0.5)
                torch.nn.init.zeros_(m.bias)
        with torch.no_grad():  # small policy logits (near-uniform start), unit-gain value
            torch.nn.init.orthogonal_(self.head.weight, gain=1.0)
            self.head.weight[: len(LEGAL)] *= 0.01
            torch.nn.init.zeros_(self.head.bias)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Normalised observations (`normalise`) -> the 3 legal logits (in LEGAL's order) and the value.
        Training works on the legal logits alone: FIRE's constant logit adds exactly 0 probability."""
        out = self.head(self.trunk(x))
        return out[:, : len(LEGAL)], out[:, len(LEGAL)]

    def normalise(self, obs: np.ndarray, out: torch.Tensor | None = None) -> torch.Tensor:
        """The fixed input affine, applied once per sample when it is observed (not at every epoch's
        forward), into `out` when given; `layers` folds it into the first layer of the exported file."""
        x = torch.from_numpy(obs).clone() if out is None else out.copy_(torch.from_numpy(obs))
        return x.sub_(self.shift).mul_(self.scale)

    def export(self, spec: NetObsSpec, path: Path) -> Path:
        """Write the network as the ONNX file every Breakout command takes (`layers`, this activation)."""
        return export_onnx(self.layers(), spec, path, activation=self.activation)

    def layers(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """(weight, bias) of each layer as float32 arrays; the last maps to the 4 logits (FIRE's row
        zero, its bias FIRE_LOGIT): what `export_onnx` writes."""
        out = [(m.weight.detach().numpy().astype(np.float64), m.bias.detach().numpy().astype(np.float64))
               for m in self.trunk if isinstance(m, torch.nn.Linear)]
        w0, b0 = out[0]  # the fixed input affine folded in: W ((x - shift) * scale) + b
        scale, shift = self.scale.numpy().astype(np.float64), self.shift.numpy().astype(np.float64)
        out[0] = (w0 * scale, b0 - (w0 * scale) @ shift)
        out = [(w.astype(np.float32), b.astype(np.float32)) for w, b in out]
        w, b = self.head.weight.detach().numpy(), self.head.bias.detach().numpy()
        w4 = np.zeros((N_ACTIONS, w.shape[1]), dtype=np.float32)
        b4 = np.zeros(N_ACTIONS, dtype=np.float32)
        for j, a in enumerate(LEGAL):
            w4[a], b4[a] = w[j], b[j]
        b4[FIRE] = FIRE_LOGIT
        out.append((w4, b4))
        return out


FEATURE_CENTRE = np.array([0.5, 0.5, 0, 0, 0.5, 0.5, 1, 0.5, 0], dtype=np.float32)  # of the scaled features
WALL_SCALE = 0.25


def input_affine(spec: NetObsSpec) -> tuple[np.ndarray, np.ndarray]:
    """A fixed (shift, scale) applied to the observation before the first layer (folded into it on
    export). Why: 108 wall flags of 1 would otherwise swamp the first layer's units at the start
    (their sum dominates each unit's input), drowning the few ball and paddle values a policy needs
    first; centred on a full wall (flag - 1) and scaled down, the wall adds nothing until bricks go,
    and the features are centred on mid-screen."""
    n_wall = spec.dim - N_FEATURES * spec.history
    shift = np.concatenate([np.tile(FEATURE_CENTRE, spec.history), np.ones(n_wall, np.float32)])
    scale = np.concatenate([np.ones(N_FEATURES * spec.history, np.float32), np.full(n_wall, WALL_SCALE, np.float32)])
    return shift.astype(np.float32), scale.astype(np.float32)


@dataclass(frozen=True)
class Plan:
    req: LearnRequest
    spec: NetObsSpec
    shadow: ShadowParams
    protocol: dict
    rollout: int
    updates: int
    config: dict


def plan(req: LearnRequest) -> Plan:
    """Check everything the request model could not (nothing is written here)."""
    spec = NetObsSpec(history=req.history, wall=req.wall)
    shadow = options.resolve_preset(req.preset, req.sticky)
    if (shadow.brick_rows, shadow.brick_cols) != (WALL_ROWS, WALL_COLS):
        raise BadInput("preset", "a network observes a 6 x 18 wall; this preset has "
                       f"{shadow.brick_rows} x {shadow.brick_cols} bricks")
    protocol = validated(Protocol, {"max_steps": req.max_steps, "serve": "auto",
                                    **({} if req.sticky is None else {"sticky": req.sticky})}).model_dump()
    if req.threads > req.envs:
        raise BadInput("threads", f"{req.threads} threads need at least as many envs (--envs {req.envs})")
    batch = req.envs * req.rollout
    if req.minibatch > batch:
        raise BadInput("minibatch", f"{req.minibatch:,} is more than one update's samples "
                       f"(--envs x --rollout = {batch:,})")
    updates = req.steps // batch
    if updates < 1:
        raise BadInput("steps", f"{req.steps:,} is less than one update (--envs x --rollout = {batch:,})")
    config = req.model_dump(mode="json", exclude=set(RUN_ONLY))
    config.update({"command": "breakout learn", "protocol": protocol, "shadow": shadow.model_dump(mode="json"),
                   "updates": updates, "seed_range": "breakout.learn"})
    return Plan(req, spec, shadow, protocol, req.rollout, updates, config)


# -- the learner --------------------------------------------------------------------------------
class Shard:
    """One thread's share of the envs: their shadow batch, observer, sampling generator and episode
    bookkeeping. Shard k of S starts its j-th episode on seed index j * S + k of ``breakout.learn``,
    so the shards never share a seed and need no lock to hand them out."""

    def __init__(self, p: Plan, index: int, count: int, n_envs: int, gen_seed: int):
        self.p, self.index, self.count = p, index, count
        self.seeds = named_range("breakout", "learn")
        self.started = 0
        self.env = ShadowBreakout(n_envs, p.shadow, seeds=self._fresh(n_envs), max_steps=p.protocol["max_steps"])
        self.gen = torch.Generator().manual_seed(gen_seed)
        self.observer = NetObserver(p.spec, n_envs)
        feats = self.env.reset()
        self.obs = self.observer.reset(feats, self.env.walls)
        self.lives = feats[:, LIVES].copy()
        self.ep_return = np.zeros(n_envs, dtype=np.float64)
        self.ep_length = np.zeros(n_envs, dtype=np.int64)

    def _fresh(self, k: int) -> np.ndarray:
        idx = (self.started + np.arange(k, dtype=np.int64)) * self.count + self.index
        if k and idx[-1] >= self.seeds.size:
            raise BadInput("steps", f"the run needs more than the {self.seeds.size:,} seeds of breakout.learn")
        self.started += k
        return self.seeds.base + idx

    def play(self, net: ActorCritic, bufs: dict[str, torch.Tensor]) -> tuple[list[float], list[int]]:
        """Play --rollout agent steps in this shard's envs, writing the samples and their GAE advantages
        and returns into `bufs` (this shard's (T, n) columns); the score and length of every game that
        ended meanwhile."""
        req, T = self.p.req, self.p.rollout
        finished_returns, finished_lengths = [], []
        with torch.no_grad():
            for t in range(T):
                x = net.normalise(self.obs, out=bufs["obs"][t])
                logits, value = net(x)
                logp_all = torch.log_softmax(logits, dim=1)
                # inverse-CDF draw: one uniform per env (a tenth of torch.multinomial's time at 2,048 rows)
                u = torch.rand(x.shape[0], generator=self.gen)
                action = (u[:, None] >= logp_all.exp().cumsum(1)[:, :-1]).sum(1)
                bufs["act"][t], bufs["val"][t] = action, value
                bufs["logp"][t] = logp_all.gather(1, action[:, None]).squeeze(1)
                in_play = self.obs[:, IN_PLAY] > 0.5
                env_a = serve_actions(LEGAL_ACTIONS[action.numpy()], in_play, None, "auto")  # as in evaluation
                feats, reward, term, trunc, _ = self.env.step(env_a)
                self.ep_return += reward
                self.ep_length += 1
                r = torch.from_numpy(reward.astype(np.float32) * req.reward_scale)
                self.obs = self.observer.observe(feats, self.env.walls)
                if trunc.any():  # the horizon is not the game's end: bootstrap with the value there
                    r[torch.from_numpy(trunc)] += req.gamma * net(net.normalise(self.obs[trunc]))[1]
                ended = term | trunc
                lost = feats[:, LIVES] < self.lives  # a lost ball ends the return the learner credits
                self.lives = feats[:, LIVES].copy()
                bufs["rew"][t] = r
                bufs["end"][t] = torch.from_numpy((ended | lost).astype(np.float32))
                if ended.any():
                    rows = np.flatnonzero(ended)
                    finished_returns += self.ep_return[rows].tolist()
                    finished_lengths += self.ep_length[rows].tolist()
                    self.ep_return[rows] = 0
                    self.ep_length[rows] = 0
                    feats = self.env.reset_rows(rows, self._fresh(rows.size))
                    self.obs = self.observer.reset(feats, self.env.walls, rows)
                    self.lives[rows] = feats[rows, LIVES]
            next_v = net(net.normalise(self.obs))[1]
        gae = torch.zeros_like(next_v)
        for t in reversed(range(T)):
            keep = 1.0 - bufs["end"][t]
            delta = bufs["rew"][t] + req.gamma * next_v * keep - bufs["val"][t]
            gae = delta + req.gamma * req.gae_lambda * keep * gae
            bufs["adv"][t] = gae
            next_v = bufs["val"][t]
        bufs["ret"].copy_(bufs["adv"] + bufs["val"])
        return finished_returns, finished_lengths

    STATE = ("started", "obs", "lives", "ep_return", "ep_length")

    def state(self) -> dict:
        s = {k: np.copy(getattr(self, k)) for k in self.STATE}
        return {**s, "env": self.env.get_state(), "gen": self.gen.get_state(), "history": self.observer.history()}

    def load_state(self, s: dict) -> None:
        self.started = int(s["started"])
        for k in self.STATE[1:]:  # in place: a loaded array's dtype object would pickle differently
            getattr(self, k)[...] = s[k]
        self.env.set_state(s["env"])
        self.gen.set_state(s["gen"])
        self.observer.set_history(s["history"])


class Learner:
    """The whole training state; `update()` plays one rollout and runs one PPO update on it.

    Why shards: intra-op threads parallelise only torch's larger ops, while the env kernel, the
    observation and the many small per-step ops stay serial; two single-threaded learners side by
    side each ran nearly as fast as one alone (measured: 265k against 288k agent steps/s). So
    --threads S splits the envs into S shards, each played on its own thread with torch
    single-threaded (the shadow kernels release the GIL), and each minibatch into S chunks whose
    gradients, computed on S replicas of the network, are summed in shard order before one Adam step.
    The sums are exactly the whole minibatch's (each chunk's loss is its sum over the minibatch
    size), and nothing depends on thread timing, so a run is deterministic for a given --threads."""

    def __init__(self, p: Plan):
        req = self.req = p.req
        self.p = p
        torch.manual_seed(req.seed)  # the initial weights (torch's init draws from the global generator)
        self.gen = torch.Generator().manual_seed(req.seed)  # minibatch permutations
        self.net = ActorCritic(p.spec, req.hidden, req.layers, req.activation)
        self.replicas = [self.net] + [copy.deepcopy(self.net) for _ in range(req.threads - 1)]
        self.opt = torch.optim.Adam(self.net.parameters(), lr=req.lr, eps=1e-5)
        sizes = [len(c) for c in np.array_split(np.arange(req.envs), req.threads)]
        self.cols = np.cumsum([0, *sizes])
        draws = np.random.SeedSequence(req.seed).generate_state(req.threads, np.uint64)  # one stream per shard
        self.shards = [Shard(p, k, req.threads, n, int(d) >> 1) for k, (n, d) in enumerate(zip(sizes, draws))]
        self.pool = ThreadPoolExecutor(req.threads) if req.threads > 1 else None
        self.done = 0
        self.curves: dict[str, list[float]] = {k: [] for k in CURVES}

    def _each(self, fn, items) -> list:
        """fn over items, one per thread (in order), results in order."""
        if self.pool is None:
            return [fn(*it) for it in items]
        return [f.result() for f in [self.pool.submit(fn, *it) for it in items]]

    @property
    def episodes(self) -> int:
        """Episodes started, the first of every env included."""
        return sum(sh.started for sh in self.shards)

    def rollout(self) -> tuple[dict[str, torch.Tensor], list[float], list[int]]:
        """Every shard plays its rollout (in parallel); the samples flattened, and the finished games."""
        T, n, dim = self.p.rollout, self.req.envs, self.p.spec.dim
        bufs = {"obs": torch.empty((T, n, dim)), "act": torch.empty((T, n), dtype=torch.int64),
                **{k: torch.empty((T, n)) for k in ("logp", "val", "rew", "end", "adv", "ret")}}  # all written
        lo, hi = self.cols[:-1], self.cols[1:]
        views = [{k: v[:, a:b] for k, v in bufs.items()} for a, b in zip(lo, hi)]
        played = self._each(Shard.play, [(sh, self.net, v) for sh, v in zip(self.shards, views)])
        returns = [r for rs, _ in played for r in rs]
        lengths = [x for _, ls in played for x in ls]
        batch = {k: bufs[k].reshape(T * n, *bufs[k].shape[2:]) for k in ("obs", "act", "logp", "adv", "ret")}
        return batch, returns, lengths

    # - update
    def _chunk_grad(self, net: ActorCritic, batch: dict, idx: torch.Tensor, adv: torch.Tensor,
                    total: int) -> torch.Tensor:
        """Backward of one chunk's share of the minibatch loss on `net`; the chunk's sums of the stats."""
        req = self.req
        logits, value = net(batch["obs"][idx])
        logp_all = torch.log_softmax(logits, dim=1)
        logp = logp_all.gather(1, batch["act"][idx, None]).squeeze(1)
        entropy = -(logp_all.exp() * logp_all).sum(1).sum()
        log_ratio = logp - batch["logp"][idx]
        ratio = log_ratio.exp()
        pg = -torch.min(ratio * adv, ratio.clamp(1 - req.clip, 1 + req.clip) * adv).sum()
        vloss = 0.5 * (value - batch["ret"][idx]).square().sum()
        net.zero_grad(set_to_none=True)
        ((pg + req.vf_coef * vloss - req.ent_coef * entropy) / total).backward()
        with torch.no_grad():
            clipped = ((ratio - 1).abs() > req.clip).float().sum()
            kl = ((ratio - 1) - log_ratio).sum()
            return torch.stack([pg, vloss, entropy, clipped, kl]).detach()

    def update(self) -> None:
        req = self.req
        frac = 1.0 - self.done / self.p.updates
        for g in self.opt.param_groups:
            g["lr"] = req.lr * frac
        batch, returns, lengths = self.rollout()
        size = batch["act"].shape[0]
        mb, S = req.minibatch, len(self.replicas)
        cuts = [mb * k // S for k in range(S + 1)]
        sums = torch.zeros(len(STATS), dtype=torch.float64)
        count = 0
        for _ in range(req.epochs):
            order = torch.randperm(size, generator=self.gen)
            for lo in range(0, size - mb + 1, mb):
                idx = order[lo: lo + mb]
                adv = batch["adv"][idx]
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)  # over the whole minibatch
                parts = [(net, batch, idx[a:b], adv[a:b], mb)
                         for net, a, b in zip(self.replicas, cuts, cuts[1:]) if b > a]
                stats = self._each(self._chunk_grad, parts)
                grads = [[q.grad for q in part[0].parameters()] for part in parts]
                for q, *gs in zip(self.net.parameters(), *grads):
                    q.grad = torch.stack(gs).sum(0) if len(gs) > 1 else gs[0]  # in shard order
                torch.nn.utils.clip_grad_norm_(self.net.parameters(), req.max_grad_norm)
                self.opt.step()
                with torch.no_grad():
                    for rep in self.replicas[1:]:
                        for q, m in zip(rep.parameters(), self.net.parameters()):
                            q.copy_(m)
                sums += torch.stack(stats).sum(0).double() / mb
                count += 1
        if not torch.isfinite(sums).all():
            raise BadInput("lr", f"training diverged at update {self.done + 1} (non-finite loss); try a smaller --lr")
        self.done += 1
        c = self.curves
        c["agent_steps"].append(self.done * size)
        c["episodes"].append(len(returns))
        c["return_mean"].append(float(np.mean(returns)) if returns else None)  # None: no game ended
        c["length_mean"].append(float(np.mean(lengths)) if lengths else None)
        for k, v in zip(STATS, (sums / count).tolist()):
            c[k].append(v)

    # - checkpoints
    def state(self) -> dict:
        return {"done": self.done, "net": self.net.state_dict(), "opt": self.opt.state_dict(),
                "gen": self.gen.get_state(), "shards": [sh.state() for sh in self.shards], "curves": self.curves}

    def load_state(self, s: dict) -> None:
        self.done = s["done"]
        for net in self.replicas:
            net.load_state_dict(s["net"])
        self.opt.load_state_dict(s["opt"])
        self.gen.set_state(s["gen"])
        for sh, st in zip(self.shards, s["shards"]):
            sh.load_state(st)
        self.curves = s["curves"]


STATS = ("policy_loss", "value_loss", "entropy", "clip_fraction", "approx_kl")
CURVES = ("agent_steps", "episodes", "return_mean", "length_mean", *STATS)


def checkpoint_bytes(state: dict) -> bytes:
    buf = io.BytesIO()
    torch.save(state, buf)
    return buf.getvalue()


def train(p: Plan, stop_after: int | None = None) -> Learner:
    """Run (or resume) the learner to the end of its budget; `stop_after` stops once that many
    updates are done (as a kill would, after its last checkpoint: the kill test's hook)."""
    req = p.req
    torch.set_num_threads(1)  # parallelism is the learner's shards (one thread each), see Learner
    torch.use_deterministic_algorithms(True)
    learner = Learner(p)
    ckpt = req.out / CHECKPOINT
    timing_path = req.out / TIMING
    timing = {"updates": [], "steps_per_s": []}
    if ckpt.is_file():
        learner.load_state(torch.load(ckpt, weights_only=False))
        if timing_path.is_file():
            timing = json.loads(timing_path.read_text())
            keep = [i for i, u in enumerate(timing["updates"]) if u <= learner.done]
            timing = {k: [v[i] for i in keep] for k, v in timing.items()}
        say(f"resuming from update {learner.done} of {p.updates} ({ckpt})")
    per_update = req.envs * req.rollout
    with progress_bar("learning in the shadow", p.updates * per_update, unit="steps") as bar:
        bar.advance(learner.done * per_update)
        while learner.done < p.updates:
            if stop_after is not None and learner.done >= stop_after:
                break
            t0 = time.perf_counter()
            learner.update()
            rate = per_update / (time.perf_counter() - t0)
            timing["updates"].append(learner.done)
            timing["steps_per_s"].append(rate)
            ret = learner.curves["return_mean"][-1]
            bar.status("return -" if ret is None else f"return {ret:.1f}")
            bar.advance(per_update)
            if learner.done % req.checkpoint_every == 0 or learner.done == p.updates:
                atomic_write_bytes(ckpt, checkpoint_bytes(learner.state()))
                write_json(timing_path, timing)
    return learner


def run_learn(req: LearnRequest):
    """`policylab breakout learn`: learn (or resume), export policy.onnx, validate on ALE, report."""
    from policylab.cli.command import Result
    from policylab.studies.breakout import transfer
    from policylab.studies.breakout.learn_report import write_learn_report

    p = plan(req)
    claim_out_dir(req.out, p.config)
    learner = train(p)
    onnx_path = req.out / "policy.onnx"
    learner.net.export(p.spec, onnx_path)
    validation, head = None, [f"learned network: {onnx_path}"]
    if req.validate_episodes:
        validation = transfer.validate_network(onnx_path, out=req.out, preset=req.preset, protocol=p.protocol,
                                               shadow=p.shadow, episodes=req.validate_episodes,
                                               gap_episodes=req.gap_episodes, executor=req.executor)
        head += transfer.headlines(validation)
    report = write_learn_report(req.out, build_report(p, learner, validation))
    return Result(report, tuple(head))


def rerun_command(req: LearnRequest) -> str:
    """The command line of this run (options that differ from their defaults), which also resumes it."""
    argv = ["policylab", "breakout", "learn", "--out", str(req.out)]
    for name, info in LearnRequest.model_fields.items():
        value = getattr(req, name)
        if name == "out" or value == info.get_default(call_default_factory=True):
            continue
        flag = "--" + name.replace("_", "-")
        argv += [flag if value else "--no-" + name.replace("_", "-")] if isinstance(value, bool) else [flag, str(value)]
    return shlex.join(argv)


def build_report(p: Plan, learner: Learner, validation: dict | None) -> dict:
    """learn.json: the run's config, its curves and the validation; timings in their own section."""
    c = learner.curves
    finite = [v for v in c["return_mean"][-10:] if v is not None]
    timing = json.loads((p.req.out / TIMING).read_text())
    return {
        "command": "breakout learn",
        "rerun": rerun_command(p.req),
        "config": p.config,
        "observation": {"history": p.spec.history, "wall": p.spec.wall, "dim": p.spec.dim},
        "network": {"hidden": p.req.hidden, "layers": p.req.layers,
                    "parameters": sum(int(x.numel()) for x in learner.net.parameters())},
        "updates": learner.done,
        "agent_steps": learner.done * p.req.envs * p.rollout,
        "episodes": learner.episodes - p.req.envs,
        "final_return_mean": float(np.mean(finite)) if finite else None,
        "curves": c,
        "timing": {**timing, "median_steps_per_s": float(np.median(timing["steps_per_s"]))},
        "policy_file": "policy.onnx",
        "validation": validation,
    }
