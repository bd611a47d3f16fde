"""`policylab breakout audit`: the original's headline gaps, paired rows, candidates and rank correlation."""

import json
import math

from policylab.cli import invoke
from policylab.policies.breakout import TRAINING_V1, V3_DEFAULTS
from policylab.stats import spearman


def audit(*args) -> None:
    assert invoke(["breakout", "audit", *map(str, args)]) == 0


def test_original_protocol_reproduces_the_headline_gaps(tmp_path):
    """The original's setting (go-v1 vs one-ball ALE without sticky actions) shows its headline gaps."""
    out = tmp_path / "audit"
    audit(
        "--policy",
        "breakout_policy_v3",
        "--episodes",
        "3",
        "--seed",
        "0",
        "--preset",
        "go-v1",
        "--serve",
        "never",
        "--sticky",
        "0",
        "--out",
        out,
    )
    data = json.loads((out / "audit.json").read_text())
    ale, shadow = data["comparison"]["ale"], data["comparison"]["shadow"]
    # the one-ball ALE episode always runs to the horizon with 4 lives left
    assert ale["done_count"] == 0 and ale["steps_mean"] == 1800
    assert all([r["lives_start"], r["lives_end"]] == [5, 4] for r in ale["rows"])
    gaps = {g["class"]: g for g in data["gap_audit"]}
    assert list(gaps) == [
        "ranking",
        "score_distribution",
        "termination_horizon",
        "ball_speed",
        "paddle_dynamics",
        "brick_score_abstraction",
    ]
    for name in ("termination_horizon", "ball_speed", "paddle_dynamics"):
        assert gaps[name]["detected"] and gaps[name]["confidence"] in ("high", "medium"), gaps[name]["finding"]
    assert gaps["ranking"]["confidence"] == "not_measured"
    dec = data["decision"]
    assert dec["headline_gaps_reproduced"]["all"] and dec["primary_failure_class"] == "env_gap"
    assert "termination/horizon, ball speed, paddle delta" in dec["statement"]
    assert dec["modified_shadow_env"] is False
    paired = data["comparison"]["paired_by_seed"]
    assert [p["seed"] for p in paired] == [0, 1, 2]
    for p, a, s in zip(paired, ale["rows"], shadow["rows"]):
        assert p["score_delta_ale_minus_shadow"] == a["score"] - s["score"]
        assert (p["ale_steps"], p["shadow_steps"]) == (a["steps"], s["steps"])


def test_candidates_give_rank_correlation_and_feature_gaps(tmp_path):
    cands = [
        {"candidate_id": "v3", "params": V3_DEFAULTS},
        {"candidate_id": "c182", "params": {f"policy_{k}": v for k, v in TRAINING_V1.items()}},
        {
            "candidate_id": "lazy",
            "params": {
                **V3_DEFAULTS,
                "far_cap": 24.0,
                "near_cap": 32.0,
                "base_deadzone": 6.0,
                "far_deadzone": 6.0,
                "near_deadzone": 4.0,
            },
        },
    ]
    path = tmp_path / "cands.json"
    path.write_text(json.dumps(cands))
    out = tmp_path / "audit"
    audit(
        "--policy",
        "breakout_policy_v3",
        "--episodes",
        "2",
        "--seed",
        "5",
        "--max-steps",
        "300",
        "--candidates",
        path,
        "--out",
        out,
        "--executor",
        "processes",
    )
    data = json.loads((out / "audit.json").read_text())
    rank = data["rank_correlation"]
    assert rank["sample_size"] == 3 and rank["reference_seeds"] == [7, 8]
    assert set(rank) >= {"pearson", "spearman", "spearman_ci95", "reference_self_spearman"}
    rows = data["candidates"]
    assert [c["candidate_id"] for c in rows] == ["v3", "c182", "lazy"]
    expected = spearman([c["shadow_score_mean"] for c in rows], [c["ale_score_mean"] for c in rows])
    assert rank["spearman"] == (None if math.isnan(expected) else expected)  # JSON has no NaN: ties give null
    for c in rows:
        assert len(c["ale_scores"]) == len(c["shadow_scores"]) == len(c["ale_reference_scores"]) == 2
        assert set(c["feature_gaps"]) == {
            "ball_abs_vx_mean",
            "ball_abs_vy_mean",
            "paddle_abs_delta_mean",
            "steps",
            "reward_count",
        }
        if c["ale_score_mean"]:
            assert c["score_ratio_shadow_over_ale"] == c["shadow_score_mean"] / c["ale_score_mean"]
    # the main policy's defaults equal candidate v3's params: its records are shared, not re-run
    v3 = next(c for c in rows if c["candidate_id"] == "v3")
    assert v3["ale_scores"] == [r["score"] for r in data["comparison"]["ale"]["rows"]]
    assert (out / "figures" / "rank.png").is_file()
