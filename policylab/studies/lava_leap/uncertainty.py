"""Intervals and paired comparisons with the training seed as the unit, and the learning-rate check.

t intervals over seeds, clipped to the quantity's range (docs/lava_leap.md, "Intervals and comparisons")."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

from policylab.stats import paired_t, t_interval
from policylab.studies.lava_leap.records import rnd, rnd_list

ORDER = ("grpo", "ppo", "reinforce")  # comparison order: the headline algorithm first
POWER = 0.8


def rnd_or_none(x):
    return None if x is None else rnd(x)


def interval(values: Sequence[float], bounds: tuple[float, float]) -> dict:
    """{n, mean, sd, ci95} of per-seed values (ci95 None with one seed), rounded once: the 95% t
    interval clipped to `bounds`, the values the quantity can take."""
    iv = t_interval(values)
    lo, hi = bounds
    return dict(
        n=iv["n"],
        mean=rnd(iv["mean"]),
        sd=rnd_or_none(iv["sd"]),
        ci95=None if iv["ci"] is None else rnd_list(min(max(x, lo), hi) for x in iv["ci"]),
    )


def comparison(a: str, b: str, xa: Sequence[float], xb: Sequence[float], seeds: Sequence[int]) -> dict:
    """`a` against `b`, paired by seed: the mean difference, its 95% t interval, a verdict, and how
    many seeds a paired test needs to detect a difference of this size with 80% power."""
    c = paired_t(xa, xb, power=POWER)
    return dict(
        a=a,
        b=b,
        seeds=list(seeds),
        n=c["n"],
        mean_a=rnd(c["mean_a"]),
        mean_b=rnd(c["mean_b"]),
        mean_delta=rnd(c["mean_delta"]),
        ci95=None if c["ci"] is None else rnd_list(c["ci"]),
        sd_delta=rnd_or_none(c["sd_delta"]),
        p_value=rnd_or_none(c["p_value"]),
        verdict=c["verdict"],
        wins=c["wins"],
        ties=c["ties"],
        losses=c["losses"],
        per_seed_delta=rnd_list(x - y for x, y in zip(xa, xb)),
        seeds_needed_80pct_power=c["seeds_needed"],
    )


def pairwise(finals: dict[str, list[float]], seeds: Sequence[int], name=lambda k: k) -> list[dict]:
    """Every pair of `finals` (in ORDER where the keys are algorithms), paired by seed."""
    keys = [k for k in ORDER if k in finals] + [k for k in finals if k not in ORDER]
    return [comparison(name(a), name(b), finals[a], finals[b], seeds) for a, b in combinations(keys, 2)]


def lr_key(algo: str, lr: float) -> str:
    return f"{algo}@{lr}"


def candidates(cfg, sweep: dict[str, list[float]]) -> dict[str, list[float]]:
    """The learning rates each algorithm is chosen from: the run's own --lr and the sweep's."""
    return {algo: sorted({float(cfg.lr), *map(float, lrs)}) for algo, lrs in sweep.items()}


def choose(by_lr: dict[tuple[str, float], list[float]], cands: dict[str, list[float]]) -> dict[str, float]:
    """Per algorithm, the learning rate with the highest mean final score on the selection seeds
    (ties: the smaller rate)."""
    chosen = {}
    for algo, lrs in cands.items():
        means = [sum(by_lr[algo, lr]) / len(by_lr[algo, lr]) for lr in lrs]
        chosen[algo] = lrs[max(range(len(lrs)), key=lambda i: (means[i], -i))]
    return chosen


def lr_sensitivity(
    cfg, by_lr: dict[tuple[str, float], list[float]], sweep: dict[str, list[float]], ceiling: float
) -> dict:
    """The original's "algo@lr" sweep points on the training seeds, each with its t interval and its
    paired difference from GRPO at the run's own learning rate (the sweep's question: does a larger
    step close the gap to GRPO?)."""
    ref = by_lr["grpo", float(cfg.lr)]
    out = {}
    for algo, lrs in sweep.items():
        for lr in lrs:
            finals = by_lr[algo, float(lr)]
            iv = interval(finals, (0.0, ceiling))
            out[lr_key(algo, lr)] = dict(
                algo=algo,
                lr=lr,
                score_mean=iv["mean"],
                score_min=rnd(min(finals)),
                score_max=rnd(max(finals)),
                n=iv["n"],
                score_sd=iv["sd"],
                score_ci95=iv["ci95"],
                per_seed=rnd_list(finals),
                vs_grpo_default=comparison(lr_key(algo, lr), lr_key("grpo", cfg.lr), finals, ref, cfg.seeds),
            )
    return out


def validation_plan(cfg, chosen: dict[str, float]) -> list[tuple[str, float]]:
    """(algo, lr) trained on the validation seeds: each chosen rate, and the default where it differs."""
    plan = []
    for algo in ORDER[::-1]:
        if algo in chosen:
            plan += [(algo, lr) for lr in sorted({chosen[algo], float(cfg.lr)})]
    return plan


def lr_selection(cfg, by_lr, cands, chosen, validated: dict[tuple[str, float], list[float]], ceiling: float) -> dict:
    """summary['lr_selection']: the rule, the candidates' selection scores, the choice, and the
    validation runs with intervals and paired verdicts (chosen vs chosen, chosen vs default)."""
    selection = {
        lr_key(a, lr): dict(
            algo=a,
            lr=lr,
            **{f"score_{k}": v for k, v in interval(by_lr[a, lr], (0.0, ceiling)).items() if k != "n"},
            chosen=chosen[a] == lr,
        )
        for a, lrs in cands.items()
        for lr in lrs
    }
    validation = {}
    for (algo, lr), finals in validated.items():
        iv = interval(finals, (0.0, ceiling))
        validation[lr_key(algo, lr)] = dict(
            algo=algo,
            lr=lr,
            chosen=chosen[algo] == lr,
            n=iv["n"],
            score_mean=iv["mean"],
            score_sd=iv["sd"],
            score_ci95=iv["ci95"],
            score_min=rnd(min(finals)),
            score_max=rnd(max(finals)),
            per_seed=rnd_list(finals),
            selection_score_mean=selection[lr_key(algo, lr)]["score_mean"],
        )
    tuned = {a: validated[a, chosen[a]] for a in ORDER if a in chosen}
    comps = pairwise(tuned, cfg.validation_seeds, name=lambda a: lr_key(a, chosen[a]))
    comps += [
        comparison(
            lr_key(a, chosen[a]),
            lr_key(a, cfg.lr),
            validated[a, chosen[a]],
            validated[a, float(cfg.lr)],
            cfg.validation_seeds,
        )
        for a in ORDER
        if a in chosen and chosen[a] != float(cfg.lr)
    ]
    return dict(
        rule="per algorithm, the learning rate with the highest mean final score on the training seeds "
        "(ties: the smaller); then every chosen rate, and the default where it differs, trained "
        "again on the validation seeds",
        selection_seeds=list(cfg.seeds),
        validation_seeds=list(cfg.validation_seeds),
        candidates={a: lrs for a, lrs in cands.items()},
        chosen=chosen,
        selection=selection,
        validation=validation,
        comparisons=comps,
    )


def side_by_side(summary: dict) -> list[dict]:
    """Each pair of algorithms' two paired verdicts: all at the run's own learning rate on the training seeds
    (the original's E2 comparison) and each at its own chosen rate on the fresh validation seeds. The page's
    headline, the runs index and the README give both: the first alone read "GRPO vs PPO: better", where at
    the rates each would be tuned to, on fresh seeds, the difference is not detectable."""
    sel, lr = summary["lr_selection"], summary["config"]["lr"]
    fresh = {tuple(c[s].split("@")[0] for s in ("a", "b")): c for c in sel["comparisons"]}
    rows = []
    for c in summary["comparisons"]:
        a, b = c["a"].lower(), c["b"].lower()
        f = fresh[a, b]
        rows.append(
            {
                "pair": f"{c['a']} vs {c['b']}",
                "equal": {"rates": f"all at lr {lr}", "mean_delta": c["mean_delta"], "verdict": c["verdict"]},
                "fresh": {
                    "rates": f"each at its chosen lr ({c['a']} {sel['chosen'][a]}, {c['b']} "
                    f"{sel['chosen'][b]}) on fresh seeds",
                    "mean_delta": f["mean_delta"],
                    "verdict": f["verdict"],
                },
            }
        )
    return rows


def verdict_line(row: dict) -> str:
    """One `side_by_side` row in words: "GRPO vs PPO: better, all at lr 0.5; no detectable difference, each at
    its chosen lr (GRPO 1.0, PPO 1.5) on fresh seeds"."""
    return (
        f"{row['pair']}: {row['equal']['verdict']}, {row['equal']['rates']}; {row['fresh']['verdict']}, "
        f"{row['fresh']['rates']}"
    )
