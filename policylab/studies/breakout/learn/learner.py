"""The Breakout learner: PPO (`policylab.learning`) on the vectorized shadow simulator.

Its shard: the shadow batch, observer history, lives and episode counter; shard k of S starts its j-th episode on
index j * S + k of ``breakout.learn`` (defaults and why: docs/breakout.md, "Learning in the shadow")."""

from __future__ import annotations

import numpy as np
import torch

from policylab.envs.breakout.contract import FEATURES
from policylab.envs.breakout.shadow import ShadowBreakout
from policylab.learning import learner as loop
from policylab.learning import rollout, shards
from policylab.learning.ppo import PPO, Settings
from policylab.policies.breakout_net import NetObserver
from policylab.rollout.seeds import named_range
from policylab.studies.breakout.episodes.runner import serve_actions
from policylab.studies.breakout.learn.network import LEGAL_ACTIONS, BreakoutActorCritic
from policylab.studies.breakout.learn.plan import Plan

IN_PLAY = FEATURES.index("ball_in_play")
LIVES = FEATURES.index("lives")
LATE_KEEP = 256  # late-game states a shard keeps for --late-starts (a ring: the newest replace the oldest)


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
        # --late-starts: the ring of late-game states, how many were stored, and which games started on a
        # fresh seed (only those are whole games, and only they make the curves)
        self.late = None
        if p.req.late_starts > 0:
            self.late = {k: np.zeros((LATE_KEEP, *v.shape[1:]), v.dtype) for k, v in self.env.row_states([0]).items()}
        self.late_n = 0
        self.fresh = np.ones(n_envs, dtype=np.bool_)

    def _fresh(self, k: int) -> np.ndarray:
        seeds = loop.episode_seeds(self.seeds, self.started, k, self.index, self.count)
        self.started += k
        return seeds

    def play(self, net: BreakoutActorCritic, bufs: dict[str, torch.Tensor]) -> tuple[list[float], list[int], dict]:
        """Play --rollout agent steps in this shard's envs, writing the samples and their GAE advantages
        and returns into `bufs` (this shard's (T, n) columns); the score and length of every game that
        ended meanwhile, and no extra measures."""
        req, T = self.p.req, self.p.rollout
        finished_returns, finished_lengths = [], []
        with torch.no_grad():
            for t in range(T):
                x = net.normalise(self.obs, out=bufs["obs"][t])
                logits, value = net(x)
                action, logp = rollout.sample(logits, self.gen)
                bufs["act"][t], bufs["val"][t] = action, value
                bufs["logp"][t] = logp
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
                if self.late is not None:
                    self._store_late(~ended, reward)
                if ended.any():
                    rows = np.flatnonzero(ended)
                    whole = rows[self.fresh[rows]]
                    finished_returns += self.ep_return[whole].tolist()
                    finished_lengths += self.ep_length[whole].tolist()
                    self.ep_return[rows] = 0
                    self.ep_length[rows] = 0
                    feats = self.env.reset_rows(rows, self._fresh(rows.size))
                    feats = self._start_late(rows, feats)
                    self.obs = self.observer.reset(feats, self.env.walls, rows)
                    self.lives[rows] = feats[rows, LIVES]
            next_v = net(net.normalise(self.obs))[1]
        rollout.gae(bufs, next_v, req.gamma, req.gae_lambda)
        return finished_returns, finished_lengths, {}

    def _store_late(self, playing: np.ndarray, reward: np.ndarray) -> None:
        """Keep the state of every game still playing whose score reached --late-score on this step (so once
        per game; a resumed game starts past it and never crosses it again)."""
        score = self.env.score
        crossed = (score >= self.p.req.late_score) & (score - reward.astype(np.int64) < self.p.req.late_score)
        rows = np.flatnonzero(playing & crossed)
        if rows.size:
            slots = (self.late_n + np.arange(rows.size)) % LATE_KEEP
            for k, v in self.env.row_states(rows).items():
                self.late[k][slots] = v
            self.late_n += rows.size

    def _start_late(self, rows: np.ndarray, feats: np.ndarray) -> np.ndarray:
        """Of the envs `rows` just reset on fresh seeds, each resumes a stored late-game state instead with
        probability --late-starts (drawn from the shard's generator); returns every env's observation."""
        self.fresh[rows] = True
        if self.late is None or self.late_n == 0:
            return feats
        late = rows[torch.rand(rows.size, generator=self.gen).numpy() < self.p.req.late_starts]
        if not late.size:
            return feats
        slots = torch.randint(min(self.late_n, LATE_KEEP), (late.size,), generator=self.gen).numpy()
        self.fresh[late] = False
        return self.env.set_row_states(late, {k: v[slots] for k, v in self.late.items()})

    STATE = ("started", "late_n", "obs", "lives", "ep_return", "ep_length", "fresh")

    def state(self) -> dict:
        s = {k: np.copy(getattr(self, k)) for k in self.STATE}
        late = {} if self.late is None else {"late": {k: v.copy() for k, v in self.late.items()}}
        return {
            **s,
            **late,
            "env": self.env.get_state(),
            "gen": self.gen.get_state(),
            "history": self.observer.history(),
        }

    def load_state(self, s: dict) -> None:
        self.started, self.late_n = int(s["started"]), int(s.get("late_n", 0))
        # the arrays, in place (a loaded array's dtype object would pickle differently); `fresh`, the last, is
        # missing from a checkpoint written before --late-starts existed: every game was fresh
        for k in self.STATE[2:-1]:
            getattr(self, k)[...] = s[k]
        self.fresh[...] = s.get("fresh", True)
        for k, v in s.get("late", {}).items():
            self.late[k][...] = v
        self.env.set_state(s["env"])
        self.gen.set_state(s["gen"])
        self.observer.set_history(s["history"])


class Learner(loop.Learner):
    """The shared learner (`learning.learner`) on Breakout's shards and network, built from a plan."""

    def __init__(self, p: Plan):
        req = self.req = p.req
        self.p = p
        torch.manual_seed(req.seed)  # the initial weights (torch's init draws from the global generator)
        net = BreakoutActorCritic(p.spec, req.hidden, req.layers, req.activation)
        ppo = PPO(net, Settings.of(req), shards.Threads(req.threads), req.seed)
        sizes, gen_seeds = loop.shard_layout(req.envs, req.threads, req.seed)
        shard_list = [Shard(p, k, req.threads, n, d) for k, (n, d) in enumerate(zip(sizes, gen_seeds))]
        super().__init__(ppo, shard_list, sizes, p.rollout, p.spec.dim, None, p.updates)


def train(p: Plan, stop_after: int | None = None) -> Learner:
    """Run (or resume) the learner to the end of its budget; `stop_after` stops once that many
    updates are done (as a kill would, after its last checkpoint: the kill test's hook)."""
    shards.deterministic_torch()
    return loop.train(Learner(p), p.req.out, p.req.checkpoint_every, "learning in the shadow", _status, stop_after)


def _status(learner: Learner) -> str:
    ret = learner.curves["return_mean"][-1]
    return "return -" if ret is None else f"return {ret:.1f}"
