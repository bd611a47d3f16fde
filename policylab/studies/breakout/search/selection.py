"""Selection rules and verdicts of the Breakout training loop.

A rule is a stable sort key written as text (``"score_mean desc"``); verdicts are paired t intervals of the delta."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from policylab.errors import BadInput
from policylab.stats import MIN_PAIRS, VERDICT_TOO_FEW, distribution, interval_side, paired_delta
from policylab.studies.breakout.requests import DEFAULT_RULE

SORTABLE = ("low_score_count", "score_min", "score_max", "score_mean", "score_median", "score_q25", "score_stdev")


def parse_rule(rule: str) -> list[tuple[str, bool]]:
    """``"a asc, b desc"`` -> [("a", False), ("b", True)] (True = descending)."""
    terms = []
    for part in rule.split(","):
        words = part.split()
        if len(words) != 2 or words[1] not in ("asc", "desc") or words[0] not in SORTABLE:
            raise BadInput(
                "select",
                f"malformed rule term {part.strip()!r}; write 'FIELD asc|desc, ...' with FIELD in "
                + ", ".join(SORTABLE),
            )
        terms.append((words[0], words[1] == "desc"))
    if len({t[0] for t in terms}) != len(terms):
        raise BadInput("select", "a field appears twice in the rule")
    return terms


def rank_candidates(rows: Sequence[Mapping[str, Any]], rule: str = DEFAULT_RULE) -> list[Mapping[str, Any]]:
    """Rows sorted by the rule; stable, so equal rows keep their input order."""
    terms = parse_rule(rule)
    ordered = list(rows)
    for field, descending in reversed(terms):
        ordered.sort(key=lambda r: r[field], reverse=descending)
    return ordered


VERDICTS = {1: "improved", -1: "worse", 0: "inconclusive", None: VERDICT_TOO_FEW}
VERDICT_RULE = (
    "improved if the t 95% interval of the paired mean delta ({pair}) is above 0, worse if below 0, "
    f"inconclusive otherwise; {VERDICT_TOO_FEW} with fewer than {MIN_PAIRS} pairs"
)


def verdict(delta: Mapping[str, Any]) -> str:
    """The verdict of a `stats.paired_delta`: where its interval lies, or too few seeds for one."""
    return VERDICTS[interval_side(delta["ci95"], delta["n"])]


def compare_paired(
    seeds: Sequence[int],
    new: Sequence[float],
    base: Sequence[float],
    new_name: str = "pick",
    base_name: str = "baseline",
) -> dict:
    """`new` against `base` on the same `seeds` (in order): both score distributions, the paired mean
    delta with its t interval, the verdict, the original's `not_lower`, and one row per seed
    (`{new_name}_score`, `{base_name}_score`, delta). The training loop's validation and the
    validation of a learned network both decide with it."""
    delta = paired_delta(new, base)
    rows = [
        {"seed": s, f"{new_name}_score": a, f"{base_name}_score": b, "delta": a - b}
        for s, a, b in zip(seeds, new, base)
    ]
    new_d, base_d = distribution(new), distribution(base)
    return {
        "new": new_d,
        "base": base_d,
        "delta": delta,
        "verdict": verdict(delta),
        "not_lower": new_d["mean"] >= base_d["mean"],
        "paired": rows,
    }
