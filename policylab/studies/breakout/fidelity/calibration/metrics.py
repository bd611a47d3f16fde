"""The two measures that judge a shadow preset against the ALE traces: per-step replay agreement and the
closed-loop `objective` (mean |log(shadow / ALE)| of five statistics; docs/breakout.md, "The fit")."""

from __future__ import annotations

import math

import numpy as np

from policylab.envs.breakout.ale import Protocol, ram_features
from policylab.envs.breakout.contract import FIRE, NOOP
from policylab.envs.breakout.params import ShadowParams
from policylab.envs.breakout.rom.kernel import brick_flags
from policylab.envs.breakout.shadow import ShadowBreakout
from policylab.policies.breakout import get_policy
from policylab.rollout.seeds import named_range
from policylab.studies.breakout.episodes.features import episode_features
from policylab.studies.breakout.episodes.runner import EpisodeTask, run_shadow_group
from policylab.studies.breakout.fidelity import trace

SHADOW_SEEDS = 64
STAT_FIELDS = ("ball_abs_vx_mean", "ball_abs_vy_mean", "paddle_abs_delta_mean", "steps_per_life", "points_per_life")


def replay_agreement(params: ShadowParams, suite: dict, tol: float = 1.0) -> dict:
    """Frames (and agent steps) until ball or paddle differ by more than `tol` px, replaying each
    trace's actions with sticky 0 frame by frame; the ball is re-placed at each ALE serve."""
    p1 = params.model_copy(update={"frameskip": 1, "sticky_prob": 0.0, "serve_rule": "fire", "lives": 9})
    per_trace, serve_runs = {}, []
    for name, (_, arr) in sorted(suite.items()):
        s = trace.signals(arr["ram"])
        acts = arr["action"].astype(np.int64)
        env = ShadowBreakout(1, p1, seeds=[0])
        env.reset()
        paddle_run = None
        paddle_exact = 0
        run_start = None
        for t in range(acts.size):
            a = NOOP if acts[t] == FIRE else int(acts[t])  # FIRE only serves; the serve is placed from ALE
            env.step(np.array([a]))
            bx, by, ppx, inp = env.positions(0)
            f = t + 1
            if s["in_play"][f] and not s["in_play"][f - 1] and f + 1 < s["ball_x"].size:
                env.place_ball(
                    0,
                    float(s["ball_x"][f]),
                    float(s["ball_y"][f]),
                    float(s["ball_x"][f + 1] - s["ball_x"][f]),
                    float(s["ball_y"][f + 1] - s["ball_y"][f]),
                )
                env.set_bricks(0, brick_flags(arr["ram"][f : f + 1])[0])  # same wall as ALE at the serve
                bx, by, ppx, inp = env.positions(0)
                run_start = f
            paddle_diff = abs(ppx - s["paddle_x"][f])
            paddle_exact += int(paddle_diff == 0)
            if paddle_run is None and paddle_diff > tol:
                paddle_run = f
            if run_start is not None:
                ball_bad = (
                    (not inp)
                    or abs(math.floor(bx) - s["ball_x"][f]) > tol
                    or abs(math.floor(by) - s["ball_y"][f]) > tol
                )
                if not s["in_play"][f] or ball_bad or paddle_diff > tol:  # diverged, or ALE's ball is gone
                    serve_runs.append(f - run_start)
                    run_start = None
        if run_start is not None:
            serve_runs.append(acts.size - run_start)
        per_trace[name] = {
            "frames": int(acts.size),
            "paddle_exact_fraction": paddle_exact / max(acts.size, 1),
            "paddle_frames_to_divergence": int(paddle_run if paddle_run is not None else acts.size),
        }
    runs = np.asarray(serve_runs, dtype=np.float64)
    return {
        "tolerance_px": tol,
        "serves": int(runs.size),
        "ball_frames_to_divergence_median": float(np.median(runs)) if runs.size else 0.0,
        "ball_frames_to_divergence_mean": float(runs.mean()) if runs.size else 0.0,
        "ball_steps_to_divergence_median": float(np.median(runs) / 4) if runs.size else 0.0,
        "paddle_exact_fraction": float(np.mean([v["paddle_exact_fraction"] for v in per_trace.values()])),
        "paddle_steps_to_divergence_min": float(min(v["paddle_frames_to_divergence"] for v in per_trace.values()) / 4),
        "per_trace": per_trace,
    }


def replay_head(rep: dict) -> dict:
    """A replay agreement without its per-trace rows."""
    return {k: v for k, v in rep.items() if k != "per_trace"}


def _pooled(rows: list[dict]) -> dict:
    steps = sum(r["steps"] for r in rows)
    lost = sum(r["lives_start"] - r["lives_end"] for r in rows)
    w = [max(r["steps"] - 1, 0) for r in rows]
    tw = max(sum(w), 1)
    out = {f: sum(r[f] * wi for r, wi in zip(rows, w)) / tw for f in STAT_FIELDS[:3]}
    out["steps_per_life"] = steps / max(lost, 1)
    out["points_per_life"] = sum(r["score"] for r in rows) / max(lost, 1)
    return out


def ale_trace_stats(suite: dict) -> dict:
    """The five objective numbers on the ALE policy traces (agent step = the trace's frameskip)."""
    rows = []
    for _, (spec, arr) in sorted(suite.items()):
        if not trace.sampled_policy_trace(spec):
            continue
        ram = arr["ram"][:: spec.frameskip]
        obs, prev = [], None
        for r in ram:
            prev = ram_features(r, prev)
            obs.append(prev)
        obs = np.asarray(obs)
        reward = np.diff(obs[:, 8])
        rows.append(episode_features(obs, reward, True))
    return _pooled(rows)


def shadow_stats(params: ShadowParams, suite: dict, seeds: int = SHADOW_SEEDS, max_steps: int = 1800) -> dict:
    """The same numbers with each policy trace's policy played in the shadow (its sticky rate, 64 seeds),
    through the project's episode runner (one vectorized batch per trace)."""
    protocol = Protocol(max_steps=max_steps).model_dump()
    rows = []
    for _, (spec, _) in sorted(suite.items()):
        if not trace.sampled_policy_trace(spec):
            continue
        prm = dict(get_policy(spec.policy).defaults, **spec.params)
        task = EpisodeTask(
            "shadow",
            named_range("breakout", "calibration").first(seeds),
            spec.policy,
            prm,
            protocol,
            shadow=params.model_copy(update={"sticky_prob": spec.sticky}),
            preset="calibration candidate",
        )
        rows.extend(episode.outcome for episode in run_shadow_group([task])[0])
    return _pooled(rows)


def objective(shadow: dict, ale: dict) -> float:
    """Mean |log(shadow / ALE)| over STAT_FIELDS."""
    return float(np.mean([abs(math.log(max(shadow[f], 1e-9) / max(ale[f], 1e-9))) for f in STAT_FIELDS]))
