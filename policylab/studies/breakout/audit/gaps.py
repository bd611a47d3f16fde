"""The six gap classes of the original audit and its decision, computed from paired-by-seed episodes
instead of written by hand (the rules: docs/breakout.md, "Choices and why")."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from policylab.stats import paired_delta

BAND = 1.5
RANK_AGREEMENT = 0.5  # Spearman below this: the shadow env does not rank candidates like ALE


def mismatch(a: float, b: float) -> bool:
    lo, hi = sorted((abs(a), abs(b)))
    if hi <= 1e-12:
        return False
    return lo <= 1e-12 or hi / lo > BAND


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


def compare(shadow: Sequence[float], ale: Sequence[float]) -> dict:
    """One metric on paired seeds: side means, ratio, whether and how consistently it mismatches."""
    s, a = _mean(shadow), _mean(ale)
    per_seed = [mismatch(x, y) for x, y in zip(shadow, ale)]
    direction = [np.sign(y - x) for x, y in zip(shadow, ale)]
    consistent = all(per_seed) and len(set(direction)) == 1
    return {
        "shadow_mean": s,
        "ale_mean": a,
        "ratio_ale_over_shadow": a / s if s else None,
        "mismatch": mismatch(s, a),
        "seeds_mismatched": int(sum(per_seed)),
        "consistent_on_every_seed": bool(consistent),
        "paired_delta_ale_minus_shadow": paired_delta(ale, shadow),
    }


def _confidence(metrics: list[dict]) -> tuple[bool, str]:
    hits = [m for m in metrics if m["mismatch"]]
    if not hits:
        return False, "low"
    return True, "high" if any(m["consistent_on_every_seed"] for m in hits) else "medium"


def _col(rows: list[dict], field: str) -> list[float]:
    return [float(r[field]) if r[field] is not None else 0.0 for r in rows]


def gap_audit(shadow: dict, ale: dict, paired: list[dict], rank: dict | None) -> list[dict]:
    """The six gaps, in the original's order, each {gap, detected, evidence, finding, impact_direction, confidence}."""
    srows, arows = shadow["rows"], ale["rows"]
    n = len(srows)
    gaps = [_ranking_gap(rank)]

    score = compare(_col(srows, "score"), _col(arows, "score"))
    spread = {
        "shadow_stdev": shadow["score"]["stdev"],
        "ale_stdev": ale["score"]["stdev"],
        "mismatch": mismatch(shadow["score"]["stdev"], ale["score"]["stdev"]),
        "consistent_on_every_seed": False,
    }
    det, conf = _confidence([score, spread])
    gaps.append(
        {
            "gap": "Score distribution and seed variance mismatch",
            "class": "score_distribution",
            "detected": det,
            "evidence": {
                "shadow": shadow["score"],
                "ale": ale["score"],
                "paired_scores": paired,
                "score": score,
                "spread": spread,
            },
            "finding": f"mean score shadow {score['shadow_mean']:.3g} vs ALE {score['ale_mean']:.3g}; "
            f"stdev {spread['shadow_stdev']:.3g} vs {spread['ale_stdev']:.3g}",
            "impact_direction": "Shadow scores do not predict ALE scores seed by seed: a shadow mean can "
            "over- or under-state a policy and miss its low-scoring ALE seeds.",
            "confidence": conf,
        }
    )

    steps = compare(_col(srows, "steps"), _col(arows, "steps"))
    done_gap = abs(shadow["done_count"] - ale["done_count"]) / max(n, 1)
    done = {
        "shadow_done_count": shadow["done_count"],
        "ale_done_count": ale["done_count"],
        "mismatch": done_gap >= 0.5,
        "consistent_on_every_seed": done_gap == 1.0,
    }
    det, conf = _confidence([steps, done])
    gaps.append(
        {
            "gap": "Episode horizon / life-reset termination mismatch",
            "class": "termination_horizon",
            "detected": det,
            "evidence": {
                "shadow_done_count": shadow["done_count"],
                "ale_done_count": ale["done_count"],
                "shadow_steps_mean": shadow["steps_mean"],
                "ale_steps_mean": ale["steps_mean"],
                "steps": steps,
                "shadow_lives": [[r["lives_start"], r["lives_end"]] for r in srows],
                "ale_lives": [[r["lives_start"], r["lives_end"]] for r in arows],
            },
            "finding": f"done {shadow['done_count']}/{n} shadow vs {ale['done_count']}/{n} ALE; mean length "
            f"{shadow['steps_mean']:.1f} vs {ale['steps_mean']:.1f} steps",
            "impact_direction": "Episodes end for different reasons on the two envs (lives vs horizon), "
            "changing late-rally exposure and score opportunity.",
            "confidence": conf,
        }
    )

    vx = compare(_col(srows, "ball_abs_vx_mean"), _col(arows, "ball_abs_vx_mean"))
    vy = compare(_col(srows, "ball_abs_vy_mean"), _col(arows, "ball_abs_vy_mean"))
    det, conf = _confidence([vx, vy])
    gaps.append(
        {
            "gap": "Ball speed and collision rhythm mismatch",
            "class": "ball_speed",
            "detected": det,
            "evidence": {
                "shadow_abs_vx_mean": vx["shadow_mean"],
                "ale_abs_vx_mean": vx["ale_mean"],
                "shadow_abs_vy_mean": vy["shadow_mean"],
                "ale_abs_vy_mean": vy["ale_mean"],
                "vx": vx,
                "vy": vy,
            },
            "finding": f"|vx| {vx['shadow_mean']:.3g} vs {vx['ale_mean']:.3g}, |vy| {vy['shadow_mean']:.3g} vs "
            f"{vy['ale_mean']:.3g} px/step (shadow vs ALE)",
            "impact_direction": "Different velocity scales and rhythms make lead and intercept policies "
            "transfer unevenly after paddle or brick contacts.",
            "confidence": conf,
        }
    )

    paddle = compare(_col(srows, "paddle_abs_delta_mean"), _col(arows, "paddle_abs_delta_mean"))
    det, conf = _confidence([paddle])
    gaps.append(
        {
            "gap": "Paddle/action dynamics mismatch",
            "class": "paddle_dynamics",
            "detected": det,
            "evidence": {
                "shadow_paddle_abs_delta_mean": paddle["shadow_mean"],
                "ale_paddle_abs_delta_mean": paddle["ale_mean"],
                "paddle": paddle,
                "shadow_paddle_abs_delta_max": max(_col(srows, "paddle_abs_delta_max")),
                "ale_paddle_abs_delta_max": max(_col(arows, "paddle_abs_delta_max")),
            },
            "finding": f"mean |paddle dx| {paddle['shadow_mean']:.3g} vs {paddle['ale_mean']:.3g} px/step",
            "impact_direction": "The same action stream moves the paddle by different amounts, "
            "especially near misses and around serves.",
            "confidence": conf,
        }
    )

    rewards = compare(_col(srows, "reward_count"), _col(arows, "reward_count"))
    ppr = {"shadow": _points_per_reward(srows), "ale": _points_per_reward(arows)}
    ppr_metric = {
        "mismatch": ppr["shadow"] is not None and ppr["ale"] is not None and mismatch(ppr["shadow"], ppr["ale"]),
        "consistent_on_every_seed": False,
    }
    det, conf = _confidence([rewards, ppr_metric])
    gaps.append(
        {
            "gap": "Brick-state / score RAM abstraction mismatch",
            "class": "brick_score_abstraction",
            "detected": det,
            "evidence": {
                "shadow_reward_counts": [r["reward_count"] for r in srows],
                "ale_reward_counts": [r["reward_count"] for r in arows],
                "points_per_reward": ppr,
                "reward_count": rewards,
                "ale_life_ram": [[r["lives_start"], r["lives_end"]] for r in arows],
            },
            "finding": f"bricks hit per episode {rewards['shadow_mean']:.3g} vs {rewards['ale_mean']:.3g}; "
            f"points per brick {_fmt(ppr['shadow'])} vs {_fmt(ppr['ale'])}",
            "impact_direction": "Reward count and brick/score progression do not map one to one, so "
            "score gains in the shadow env need not mean brick progress on ALE.",
            "confidence": conf,
        }
    )
    return gaps


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3g}"


def _points_per_reward(rows: list[dict]) -> float | None:
    count = sum(r["reward_count"] for r in rows)
    return sum(r["score"] for r in rows) / count if count else None


def _ranking_gap(rank: dict | None) -> dict:
    base = {
        "gap": "Shadow/ALE candidate ranking mismatch",
        "class": "ranking",
        "impact_direction": "The shadow score can promote candidates that ALE ranks poorly; "
        "ALE validation remains mandatory.",
    }
    if rank is None:
        return {
            **base,
            "detected": None,
            "evidence": {},
            "confidence": "not_measured",
            "finding": "no --candidates given; ranking agreement not measured",
        }
    rho, n = rank["spearman"], rank["sample_size"]
    ceiling = rank["reference_self_spearman"]
    detected = rho is None or math.isnan(rho) or rho < RANK_AGREEMENT
    hi = rank["spearman_ci95"][1]
    below_ceiling = ceiling is not None and hi is not None and not math.isnan(hi) and hi < ceiling
    conf = "high" if n >= 8 and below_ceiling else ("medium" if n >= 5 else "low")
    return {
        **base,
        "detected": bool(detected),
        "evidence": rank,
        "confidence": conf if detected else "low",
        "finding": f"Spearman {_fmt(rho)} over {n} candidates (ALE-vs-ALE ceiling {_fmt(ceiling)})",
    }


HEADLINE = {"termination_horizon": "termination/horizon", "ball_speed": "ball speed", "paddle_dynamics": "paddle delta"}
ENV_CLASSES = ("termination_horizon", "ball_speed", "paddle_dynamics", "brick_score_abstraction")
NEXT_STEP = {  # in the order to act on them: episode semantics before physics before selection
    "termination_horizon": "make the episode semantics match first (serve rule, lives vs horizon)",
    "ball_speed": "calibrate ball speeds (paddle_bounce_y, speed levels) against ALE traces",
    "paddle_dynamics": "calibrate paddle motion (acceleration, speed cap) against ALE action logs",
    "brick_score_abstraction": "match brick rows and points to ALE scoring",
    "score_distribution": "compare per-seed traces where shadow and ALE scores diverge most",
    "ranking": "select on ALE (or screen the shadow's top candidates on ALE) instead of the shadow score",
}


def decision(gaps: list[dict], shadow: dict, ale: dict) -> dict:
    """The audit's decision object (the original's), extended with which of the original's headline gaps it reproduces."""
    by_class = {g["class"]: g for g in gaps}
    detected = [g["class"] for g in gaps if g["detected"]]
    env = [c for c in ENV_CLASSES if c in detected]
    if env:
        primary = "env_gap"
    elif "score_distribution" in detected or "ranking" in detected:
        primary = "transfer_gap"
    else:
        primary = "none"
    ale_nulls = sum(
        1
        for a, s in zip(ale["rows"], shadow["rows"])
        if a["first_reward_step"] is None and s["first_reward_step"] is not None
    )
    if ale["score"]["low_score_count"] > shadow["score"]["low_score_count"] or ale_nulls:
        secondary = "policy_timing"
    elif "score_distribution" in detected and primary != "transfer_gap":
        secondary = "seed_variance"
    else:
        secondary = None
    headline = {c: bool(by_class[c]["detected"]) for c in HEADLINE}
    headline["all"] = all(headline.values())
    reproduced = [HEADLINE[c] for c in HEADLINE if headline[c]]
    statement = (
        "Reproduces the original audit's headline gaps: " + ", ".join(reproduced) + " mismatch."
        if headline["all"]
        else "Reproduces " + (", ".join(reproduced) if reproduced else "none") + " of the original's headline gaps "
        "(termination/horizon, ball speed, paddle delta)."
    )
    steps = [NEXT_STEP[c] for c in NEXT_STEP if c in detected]
    return {
        "modified_shadow_env": False,
        "reason_no_env_change": "An audit measures gaps and changes no env. As in the original, a shadow "
        "parameter is changed only when one change is isolated with a before/after metric.",
        "detected_gaps": detected,
        "primary_failure_class": primary,
        "secondary_failure_class": secondary,
        "ale_low_score_count": ale["score"]["low_score_count"],
        "shadow_low_score_count": shadow["score"]["low_score_count"],
        "headline_gaps_reproduced": headline,
        "statement": statement,
        "next_recommendation": ("; ".join(steps) + ".")
        if steps
        else "No gap detected at this sample size; re-audit with more episodes before trusting shadow-only selection.",
    }
