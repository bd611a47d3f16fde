"""Intervals and paired verdicts against an independent computation written here: the t quantile by
integrating Student's density (math.lgamma, Simpson, bisection), the power of a paired t-test by
integrating over the chi-square of the variance (math.erf), and the learning-rate selection and
validation seeds against their named ranges."""

from __future__ import annotations

import math

import pytest

from policylab.rollout.seeds import named_range
from policylab.stats import paired_t, seeds_for_power, t_interval
from policylab.studies.lava_leap import uncertainty
from tests.support.lava_run_cache import cli, full_run, load


# -- independent references ----------------------------------------------------------------------
def simpson(f, a: float, b: float, n: int = 2000) -> float:
    h = (b - a) / n
    return h / 3 * (f(a) + f(b) + sum((4 if i % 2 else 2) * f(a + i * h) for i in range(1, n)))


def t_cdf(x: float, df: int) -> float:
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    return 0.5 + simpson(lambda u: c * (1 + u * u / df) ** (-(df + 1) / 2), 0.0, x)


def t_quantile(p: float, df: int) -> float:
    lo, hi = 0.0, 100.0
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
    return (lo + hi) / 2


def hand_interval(xs: list[float]) -> tuple[float, float, float]:
    n = len(xs)
    mean = sum(xs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    half = t_quantile(0.975, n - 1) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def phi(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def hand_power(n: int, delta: float, sd: float) -> float:
    """P(|T| > c) for T = (Z + ncp) / sqrt(V / df), V ~ chi-square(df): integrate over V."""
    df = n - 1
    c = t_quantile(0.975, df)
    ncp = math.sqrt(n) * abs(delta) / sd
    log_norm = -(df / 2) * math.log(2) - math.lgamma(df / 2)

    def integrand(v: float) -> float:
        if v <= 0:
            return 0.0
        dens = math.exp(log_norm + (df / 2 - 1) * math.log(v) - v / 2)
        s = c * math.sqrt(v / df)
        return dens * (1 - phi(s - ncp) + phi(-s - ncp))

    return simpson(integrand, 0.0, df + 40 * math.sqrt(2 * df) + 40, 6000)


# -- the reference itself ----------------------------------------------------------------------------
def test_hand_t_quantile_matches_the_printed_tables():
    for df, q in ((1, 12.7062), (4, 2.7764), (9, 2.2622), (29, 2.0452)):
        assert abs(t_quantile(0.975, df) - q) < 1e-4


# -- policylab.stats ------------------------------------------------------------------------------------
@pytest.mark.parametrize("xs", [[0.5626, 0.5562, 0.5608, 0.5673, 0.5644], [1.0, 2.0], [3.0, -1.0, 2.5, 7.25]])
def test_t_interval_against_hand_formula(xs):
    iv = t_interval(xs)
    mean, lo, hi = hand_interval(xs)
    assert iv["n"] == len(xs) and abs(iv["mean"] - mean) < 1e-12
    assert abs(iv["ci"][0] - lo) < 1e-7 and abs(iv["ci"][1] - hi) < 1e-7


def test_one_value_has_no_interval_and_no_verdict():
    assert t_interval([0.4])["ci"] is None
    c = paired_t([0.5], [0.4])
    assert c["ci"] is None and c["verdict"] == "too few seeds" and c["seeds_needed"] is None


def test_paired_verdicts():
    a = [0.50, 0.52, 0.51, 0.53, 0.49]
    assert paired_t([x + 0.05 for x in a], a)["verdict"] == "better"  # constant difference: zero-width interval
    assert paired_t(a, [x + 0.05 for x in a])["verdict"] == "worse"
    noisy = paired_t([0.5, 0.6, 0.4, 0.55, 0.45], [0.52, 0.5, 0.5, 0.5, 0.5])
    assert noisy["verdict"] == "no detectable difference"
    mean, lo, hi = hand_interval([x - y for x, y in zip([0.5, 0.6, 0.4, 0.55, 0.45], [0.52, 0.5, 0.5, 0.5, 0.5])])
    assert abs(noisy["ci"][0] - lo) < 1e-7 and abs(noisy["ci"][1] - hi) < 1e-7 and lo < 0 < hi


@pytest.mark.parametrize("delta, sd", [(0.01, 0.05), (0.0349, 0.121), (0.062, 0.0105), (0.2, 0.01)])
def test_seeds_needed_is_the_first_n_with_80pct_power(delta, sd):
    n = seeds_for_power(delta, sd)
    assert n is not None and n >= 2
    assert hand_power(n, delta, sd) >= 0.8 - 1e-6
    if n > 2:
        assert hand_power(n - 1, delta, sd) < 0.8 + 1e-6


def test_seeds_needed_edge_cases():
    assert seeds_for_power(0.0, 0.1) is None and seeds_for_power(0.1, None) is None
    assert seeds_for_power(1e-7, 0.05) is None  # beyond 100,000 seeds
    assert seeds_for_power(0.1, 0.0) == 2


def test_interval_is_clipped_to_the_range_the_quantity_takes():
    """A two-mode outcome (four seeds near the ceiling, one collapsed): the t interval runs past the
    ceiling, the reported one stops there; a tight one is left as it is."""
    collapsed = [0.571, 0.568, 0.31, 0.573, 0.570]
    assert hand_interval(collapsed)[2] > 0.581
    assert uncertainty.interval(collapsed, (0.0, 0.581))["ci95"][1] == 0.581
    tight = [0.556, 0.56, 0.562, 0.566, 0.561]
    assert uncertainty.interval(tight, (0.0, 0.581))["ci95"] == [round(x, 6) for x in hand_interval(tight)[1:]]
    assert uncertainty.interval([0.02, 0.9, 0.01], (0.0, 1.0))["ci95"][0] == 0.0


# -- the run's numbers -------------------------------------------------------------------------------------
def _check_interval(values: list[float], ci: list[float], mean: float, top: float) -> None:
    """The hand t interval, clipped to [0, top] (the ceiling for scores, 1 for exit rates)."""
    m, lo, hi = hand_interval(values)
    lo, hi = min(max(lo, 0.0), top), min(max(hi, 0.0), top)
    assert abs(mean - m) < 1.5e-6 and abs(ci[0] - lo) < 1.5e-6 and abs(ci[1] - hi) < 1.5e-6
    assert 0.0 <= ci[0] <= ci[1] <= top


def _check_comparison(c: dict, a: list[float], b: list[float]) -> None:
    d = [x - y for x, y in zip(a, b)]
    m, lo, hi = hand_interval(d)
    assert abs(c["mean_delta"] - m) < 1.5e-6
    assert abs(c["ci95"][0] - lo) < 1.5e-6 and abs(c["ci95"][1] - hi) < 1.5e-6
    verdict = "better" if lo > 0 else "worse" if hi < 0 else "no detectable difference"
    assert c["verdict"] == verdict
    assert (c["wins"], c["losses"]) == (sum(x > 0 for x in d), sum(x < 0 for x in d))


def test_final_scores_and_pairs_against_hand_computation():
    s = load(full_run(), "summary.json")
    scores = {a: [p["score"] for p in s["final"][a]["per_seed"]] for a in ("reinforce", "ppo", "grpo")}
    exits = {a: [p["exit_rate"] for p in s["final"][a]["per_seed"]] for a in scores}
    for a in scores:
        f = s["final"][a]
        assert f["n_seeds"] == 5
        _check_interval(scores[a], f["score_ci95"], f["score_mean"], s["ceiling"]["score"])
        _check_interval(exits[a], f["exit_ci95"], f["exit_mean"], 1.0)
        assert s["e6"][a]["ci95"] == f["exit_ci95"]
    names = {"GRPO": "grpo", "PPO": "ppo", "REINFORCE": "reinforce"}
    pairs = {(c["a"], c["b"]) for c in s["comparisons"]}
    assert pairs == {("GRPO", "PPO"), ("GRPO", "REINFORCE"), ("PPO", "REINFORCE")}
    for c in s["comparisons"]:
        _check_comparison(c, scores[names[c["a"]]], scores[names[c["b"]]])
        assert c["seeds"] == s["config"]["seeds"]


def test_lr_sweep_points_against_hand_computation():
    s = load(full_run(), "summary.json")
    grpo_default = [p["score"] for p in s["final"]["grpo"]["per_seed"]]
    for _key, v in s["lr_sensitivity"].items():
        assert len(v["per_seed"]) == 5
        _check_interval(v["per_seed"], v["score_ci95"], v["score_mean"], s["ceiling"]["score"])
        _check_comparison(v["vs_grpo_default"], v["per_seed"], grpo_default)
    # the question: PPO at lr 1.5 against GRPO at the default lr, on the same seeds
    assert s["lr_sensitivity"]["ppo@1.5"]["vs_grpo_default"]["b"] == "grpo@0.5"


def test_lr_chosen_on_training_seeds_and_compared_on_fresh_ones():
    s = load(full_run(), "summary.json")
    sel = s["lr_selection"]
    training, validation = named_range("lava_leap", "training"), named_range("lava_leap", "validation")
    assert sel["selection_seeds"] == s["config"]["seeds"] and all(x in training for x in sel["selection_seeds"])
    assert all(x in validation for x in sel["validation_seeds"]) and len(sel["validation_seeds"]) == 5
    assert not set(sel["selection_seeds"]) & set(sel["validation_seeds"])
    # the choice: highest mean on the training seeds, among the default and the sweep
    for algo, lrs in sel["candidates"].items():
        means = {lr: sel["selection"][f"{algo}@{lr}"]["score_mean"] for lr in lrs}
        assert sel["chosen"][algo] == max(lrs, key=lambda lr: (means[lr], -lr))
        assert 0.5 in lrs
    for _key, v in sel["validation"].items():
        assert v["n"] == 5
        _check_interval(v["per_seed"], v["score_ci95"], v["score_mean"], s["ceiling"]["score"])
    val = {k: v["per_seed"] for k, v in sel["validation"].items()}
    for c in sel["comparisons"]:
        _check_comparison(c, val[c["a"]], val[c["b"]])
        assert c["seeds"] == sel["validation_seeds"]


def test_validation_seeds_that_overlap_training_are_bad_input(tmp_path):
    for args in (["--seed-base", "1000"], ["--validation-seed-base", "3"]):
        out = tmp_path / "out"
        proc = cli("--out", out, *args)
        assert proc.returncode == 2
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("policylab: error: validation_seed_base:"), proc.stderr
        assert "overlap" in lines[0] and not out.exists()
