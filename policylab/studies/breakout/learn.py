"""`policylab breakout learn`: PPO in the vectorized shadow, then the learned network judged on ALE.

Why a learner here: a nine-parameter tracker cannot exploit the shadow much, a network can, so
whether a policy *learned* in the shadow holds on ALE is the real test of the shadow (issue 14).

The learner is PPO (clipped objective, GAE, a value head, an entropy bonus, per-minibatch advantage
normalisation, global gradient-norm clipping, linearly annealed learning rate) written here on
torch's CPU build. The network is a tanh MLP with one shared trunk and a head of 3 action logits
plus the value. It sees the network observation of `policies.breakout_net` (scaled contract
features, optionally their history, and the 6 x 18 wall), so the same file plays on ALE.

FIRE is masked: the network's FIRE logit is a constant -1e4 (so its probability is exactly 0 in
float32 and greedy play never picks it). While a ball is in play FIRE does what NOOP does; while
none is, the protocol's serve rule (auto) FIREs for every policy, in training exactly as in
evaluation, so the network never needs it.

Life loss ends the credited return (as Atari PPO's usual episodic-life wrapper does): at a lost ball
the advantage does not bootstrap past it, so the value of keeping the ball alive is learned from
the first rollouts instead of the scarce brick rewards alone. The env plays on with its remaining
lives; the reported episode is the whole game.

Episodes: every env plays until game over or the protocol's horizon (`max_steps`, a truncation:
the return is bootstrapped with the value of the last observation) and is then reset at once on a
fresh seed from the named range ``breakout.learn`` (base + the run's episode counter, handed out
in env order at each step), so no training seed is ever reused or shared with ALE's.

Determinism: one torch generator (seeded by --seed) draws the initial weights, every action and
every minibatch permutation; torch runs with `use_deterministic_algorithms` on --threads threads.
The same config on the same thread count writes the same checkpoint and ONNX bytes.

Checkpoints: every --checkpoint-every updates the whole state (network, optimizer, generator, env
arrays, observer history, episode counters, curves) is written atomically to OUT/checkpoint.pt;
rerunning the command after a kill resumes from it and ends with the bytes of an uninterrupted run.
Wall-clock timings (steps/s) are not part of that state: they go to OUT/timing.json.
"""

from __future__ import annotations

import io
import json
import os
import shlex
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# Before torch loads OpenMP: idle worker threads sleep instead of spinning. On a shared 2-core machine a
# spinning thread starves its partner, and updates ran 10-25x slower (measured: 600-2,500 steps/s
# against 16,000 with PASSIVE, same config and load); on an idle machine it costs nothing measurable.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import torch  # noqa: E402

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
FIRE_LOGIT = -1e4
IN_PLAY = FEATURES.index("ball_in_play")
LIVES = FEATURES.index("lives")
CHECKPOINT = "checkpoint.pt"
TIMING = "timing.json"
RUN_ONLY = ("out",)  # where a run goes, never what it learns


class ActorCritic(torch.nn.Module):
    """Shared tanh trunk; head = 3 legal-action logits + value. `forward` gives 4 logits (FIRE's a
    constant) and the value."""

    def __init__(self, spec: NetObsSpec, hidden: int, layers: int):
        super().__init__()
        shift, scale = input_affine(spec)
        self.register_buffer("shift", torch.from_numpy(shift))
        self.register_buffer("scale", torch.from_numpy(scale))
        mods: list[torch.nn.Module] = []
        width = spec.dim
        for _ in range(layers):
            mods += [torch.nn.Linear(width, hidden), torch.nn.Tanh()]
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
        out = self.head(self.trunk((x - self.shift) * self.scale))
        legal, value = out[:, : len(LEGAL)], out[:, len(LEGAL)]
        fire = torch.full_like(legal[:, :1], FIRE_LOGIT)
        return torch.cat([legal[:, :1], fire, legal[:, 1:]], dim=1), value

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
class Learner:
    """The whole training state; `update()` plays one rollout and runs one PPO update on it."""

    def __init__(self, p: Plan):
        req = self.req = p.req
        self.p = p
        torch.manual_seed(req.seed)  # the initial weights (torch's init draws from the global generator)
        self.gen = torch.Generator().manual_seed(req.seed)
        self.net = ActorCritic(p.spec, req.hidden, req.layers)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=req.lr, eps=1e-5)
        self.seeds = named_range("breakout", "learn")
        n = req.envs
        self.env = ShadowBreakout(n, p.shadow, seeds=self._fresh(n), max_steps=p.protocol["max_steps"])
        self.next_episode = n
        self.observer = NetObserver(p.spec, n)
        feats = self.env.reset()
        self.obs = self.observer.reset(feats, self.env.walls)
        self.lives = feats[:, LIVES].copy()
        self.ep_return = np.zeros(n, dtype=np.float64)
        self.ep_length = np.zeros(n, dtype=np.int64)
        self.done = 0
        self.curves: dict[str, list[float]] = {k: [] for k in CURVES}

    def _fresh(self, k: int) -> np.ndarray:
        start = getattr(self, "next_episode", 0)
        if start + k > self.seeds.size:
            raise BadInput("steps", f"the run needs more than the {self.seeds.size:,} seeds of breakout.learn")
        return np.arange(self.seeds.base + start, self.seeds.base + start + k, dtype=np.int64)

    # - rollout
    def _act(self, obs: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            logits, value = self.net(torch.from_numpy(obs))
            logp_all = torch.log_softmax(logits, dim=1)
            action = torch.multinomial(logp_all.exp(), 1, generator=self.gen).squeeze(1)
            return action, logp_all.gather(1, action[:, None]).squeeze(1), value

    def rollout(self) -> tuple[dict[str, torch.Tensor], list[float], list[int]]:
        """Play --rollout agent steps in every env; the samples with their GAE advantages and returns,
        and the score and length of every game that ended meanwhile."""
        req, T, n = self.req, self.p.rollout, self.req.envs
        obs_b = torch.zeros((T, n, self.p.spec.dim), dtype=torch.float32)
        act_b = torch.zeros((T, n), dtype=torch.int64)
        logp_b = torch.zeros((T, n))
        val_b = torch.zeros((T, n))
        rew_b = torch.zeros((T, n))
        end_b = torch.zeros((T, n))
        finished_returns, finished_lengths = [], []
        for t in range(T):
            obs_b[t] = torch.from_numpy(self.obs)
            action, logp, value = self._act(self.obs)
            act_b[t], logp_b[t], val_b[t] = action, logp, value
            a = action.numpy()
            env_a = serve_actions(a, self.obs_in_play(), None, "auto")  # the serve rule, as in evaluation
            feats, reward, term, trunc, _ = self.env.step(env_a)
            self.ep_return += reward
            self.ep_length += 1
            r = torch.from_numpy(reward.astype(np.float32) * req.reward_scale)
            self.obs = self.observer.observe(feats, self.env.walls)
            if trunc.any():  # the horizon is not the game's end: bootstrap with the value there
                with torch.no_grad():
                    _, v_end = self.net(torch.from_numpy(self.obs[trunc]))
                r[torch.from_numpy(trunc)] += req.gamma * v_end
            ended = term | trunc
            lost = feats[:, LIVES] < self.lives  # a lost ball ends the return the learner credits
            self.lives = feats[:, LIVES].copy()
            rew_b[t] = r
            end_b[t] = torch.from_numpy((ended | lost).astype(np.float32))
            if ended.any():
                rows = np.flatnonzero(ended)
                finished_returns += self.ep_return[rows].tolist()
                finished_lengths += self.ep_length[rows].tolist()
                self.ep_return[rows] = 0
                self.ep_length[rows] = 0
                feats = self.env.reset_rows(rows, self._fresh(rows.size))
                self.next_episode += rows.size
                self.obs = self.observer.reset(feats, self.env.walls, rows)
                self.lives[rows] = feats[rows, LIVES]
        with torch.no_grad():
            _, last_v = self.net(torch.from_numpy(self.obs))
        adv = torch.zeros((T, n))
        gae = torch.zeros(n)
        for t in reversed(range(T)):
            next_v = last_v if t == T - 1 else val_b[t + 1]
            keep = 1.0 - end_b[t]
            delta = rew_b[t] + req.gamma * next_v * keep - val_b[t]
            gae = delta + req.gamma * req.gae_lambda * keep * gae
            adv[t] = gae
        batch = {"obs": obs_b.reshape(T * n, -1), "act": act_b.reshape(-1), "logp": logp_b.reshape(-1),
                 "adv": adv.reshape(-1), "ret": (adv + val_b).reshape(-1)}
        return batch, finished_returns, finished_lengths

    def obs_in_play(self) -> np.ndarray:
        """Whether each env has a ball in play, read from the newest features of its observation."""
        return self.obs[:, IN_PLAY] > 0.5

    # - update
    def update(self) -> None:
        req = self.req
        frac = 1.0 - self.done / self.p.updates
        for g in self.opt.param_groups:
            g["lr"] = req.lr * frac
        batch, returns, lengths = self.rollout()
        size = batch["act"].shape[0]
        stats = {"policy_loss": 0.0, "value_loss": 0.0, "entropy": 0.0, "clip_fraction": 0.0, "approx_kl": 0.0}
        count = 0
        for _ in range(req.epochs):
            order = torch.randperm(size, generator=self.gen)
            for lo in range(0, size - req.minibatch + 1, req.minibatch):
                idx = order[lo: lo + req.minibatch]
                logits, value = self.net(batch["obs"][idx])
                logp_all = torch.log_softmax(logits, dim=1)
                logp = logp_all.gather(1, batch["act"][idx, None]).squeeze(1)
                entropy = -(logp_all.exp() * logp_all).sum(1).mean()
                adv = batch["adv"][idx]
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                log_ratio = logp - batch["logp"][idx]
                ratio = log_ratio.exp()
                pg = -torch.min(ratio * adv, ratio.clamp(1 - req.clip, 1 + req.clip) * adv).mean()
                vloss = 0.5 * (value - batch["ret"][idx]).square().mean()
                loss = pg + req.vf_coef * vloss - req.ent_coef * entropy
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.net.parameters(), req.max_grad_norm)
                self.opt.step()
                with torch.no_grad():
                    stats["policy_loss"] += float(pg)
                    stats["value_loss"] += float(vloss)
                    stats["entropy"] += float(entropy)
                    stats["clip_fraction"] += float(((ratio - 1).abs() > req.clip).float().mean())
                    stats["approx_kl"] += float(((ratio - 1) - log_ratio).mean())
                count += 1
        if not all(np.isfinite(v) for v in stats.values()):
            raise BadInput("lr", f"training diverged at update {self.done + 1} (non-finite loss); try a smaller --lr")
        self.done += 1
        c = self.curves
        c["agent_steps"].append(self.done * size)
        c["episodes"].append(len(returns))
        c["return_mean"].append(float(np.mean(returns)) if returns else None)  # None: no game ended
        c["length_mean"].append(float(np.mean(lengths)) if lengths else None)
        for k, v in stats.items():
            c[k].append(v / count)

    # - checkpoints
    def state(self) -> dict:
        return {"done": self.done, "net": self.net.state_dict(), "opt": self.opt.state_dict(),
                "gen": self.gen.get_state(), "env": self.env.get_state(), "hist": self.observer._hist.copy(),
                "obs": self.obs.copy(), "lives": self.lives.copy(), "next_episode": self.next_episode, "ep_return": self.ep_return.copy(),
                "ep_length": self.ep_length.copy(), "curves": self.curves}

    def load_state(self, s: dict) -> None:
        self.done = s["done"]
        self.net.load_state_dict(s["net"])
        self.opt.load_state_dict(s["opt"])
        self.gen.set_state(s["gen"])
        self.env.set_state(s["env"])
        self.observer._hist[...] = s["hist"]
        self.obs = s["obs"].copy()
        self.lives = s["lives"].copy()
        self.next_episode = s["next_episode"]
        self.ep_return[...] = s["ep_return"]
        self.ep_length[...] = s["ep_length"]
        self.curves = s["curves"]


CURVES = ("agent_steps", "episodes", "return_mean", "length_mean", "policy_loss", "value_loss", "entropy",
          "clip_fraction", "approx_kl")


def checkpoint_bytes(state: dict) -> bytes:
    buf = io.BytesIO()
    torch.save(state, buf)
    return buf.getvalue()


def train(p: Plan, stop_after: int | None = None) -> Learner:
    """Run (or resume) the learner to the end of its budget; `stop_after` stops once that many
    updates are done (as a kill would, after its last checkpoint: the kill test's hook)."""
    req = p.req
    torch.set_num_threads(req.threads)
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
    export_onnx(learner.net.layers(), p.spec, onnx_path)
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
        "episodes": learner.next_episode - p.req.envs,
        "final_return_mean": float(np.mean(finite)) if finite else None,
        "curves": c,
        "timing": {**timing, "median_steps_per_s": float(np.median(timing["steps_per_s"]))},
        "policy_file": "policy.onnx",
        "validation": validation,
    }
