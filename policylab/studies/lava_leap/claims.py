"""The narrative's claims as checks over every training seed, and the chart titles they decide.

Pure functions (arrays in, numbers and words out); thresholds: docs/lava_leap.md, "Constraints and claims"."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from policylab.studies.lava_leap.exact import patterns
from policylab.studies.lava_leap.floor import EXIT, FLOOR, channels
from policylab.studies.lava_leap.records import rnd, rnd_list, words

LEAP_AT = 0.5  # "leaps" on a pattern: P(LEAP) above this; "steps": below it
LEAP_ON, STEP_ON, FREE = ("100", "110"), ("001", "010", "011"), "000"
ONLY_TOL = 1e-12  # "falls only at two-tile channels": the fall probability elsewhere is at most this
MOSTLY = 0.5  # "falls mostly at two-tile channels": more than this share of the fall probability, every seed
PLATEAU_FLAT, PLATEAU_MIN, PLATEAU_BELOW = 0.02, 40, 0.05

E1_TITLE = "Untrained, it falls early; trained, it falls only at two-tile channels"
E3B_TITLE = "The easy floor's worst run beats the hard floor's best"
E5_TITLE = "Trained, the bot leaps when lava is directly ahead and steps everywhere else"


def seed_list(seeds: Sequence[int]) -> str:
    return ", ".join(str(s) for s in seeds)


# -- E1: where the trained bot falls -------------------------------------------------------------
def fall_distribution(table: np.ndarray, lava: np.ndarray) -> tuple[np.ndarray, float]:
    """Exact probability of ending on each tile by falling (FLOOR,), and of reaching the exit, for a
    leap table on one floor: the probability mass moved forward tile by tile (STEP +1; LEAP +2 or
    +3, half each; landings past the dock are the dock)."""
    lava = np.asarray(lava, dtype=bool)
    pats = patterns(lava[None])[0]
    mass = np.zeros(FLOOR)
    mass[0] = 1.0
    fall = np.zeros(FLOOR)
    for t in range(EXIT):
        if lava[t]:
            fall[t] = mass[t]
            continue
        q = float(table[pats[t]])
        for d, w in ((1, 1.0 - q), (2, q / 2), (3, q / 2)):
            mass[min(t + d, EXIT)] += mass[t] * w
    return fall, float(mass[EXIT])


def wide_tiles(lava: np.ndarray) -> set[int]:
    return {t + d for t, w in channels(lava) if w == 2 for d in range(w)}


def falls_at_wide(table: np.ndarray, lava: np.ndarray) -> dict:
    """Share of the fall probability on two-tile channel tiles, the probability of falling anywhere
    else, and the exit probability."""
    fall, p_exit = fall_distribution(table, lava)
    wide = sorted(wide_tiles(lava))
    total = float(fall.sum())
    at_wide = float(fall[wide].sum()) if wide else 0.0
    return dict(share_at_wide=(at_wide / total) if total > 0 else 1.0, p_fall_elsewhere=total - at_wide, p_exit=p_exit)


def e1_claim(seeds, tables, lava, shown_all_at_wide: bool, before_mean_tile: float, after_mean_tile: float):
    """(check row, title) for "trained, it falls only at two-tile channels"."""
    per = [falls_at_wide(t, lava) for t in tables]
    only = all(p["p_fall_elsewhere"] <= ONLY_TOL for p in per)
    holds = only and shown_all_at_wide
    shares = [p["share_at_wide"] for p in per]
    row = dict(
        kind="narrative",
        id="e1",
        chart="e1",
        constraint="trained, the bot falls only at two-tile channels (E1 title)",
        threshold=f"the exact probability of falling anywhere but a two-tile channel tile is 0 (<= {ONLY_TOL}) "
        "for every GRPO seed, and every fall among the shown plays is on a two-tile channel",
        scope=f"the showcase floor; GRPO seeds {seed_list(seeds)} (exact); the chart's plays are the first seed's",
        values=dict(
            seeds=list(seeds),
            share_at_wide=rnd_list(shares),
            p_fall_elsewhere=rnd_list(p["p_fall_elsewhere"] for p in per),
            p_exit=rnd_list(p["p_exit"] for p in per),
            shown_plays_all_at_wide=shown_all_at_wide,
        ),
        holds=holds,
    )
    if holds:
        title = E1_TITLE
    elif min(shares) > MOSTLY:
        lo, hi = 100 * min(shares), 100 * max(shares)
        share = f"{lo:.0f}%" if round(lo) == round(hi) else f"{lo:.0f}-{hi:.0f}%"
        title = f"Untrained, it falls early; trained, it falls mostly at two-tile channels ({share} of its fall chance)"
    elif after_mean_tile > before_mean_tile:
        title = (
            f"Training carries the bot further: its runs end at tile {after_mean_tile:.0f} on average, "
            f"against {before_mean_tile:.0f} untrained"
        )
    else:
        title = "Training does not carry the bot further on this floor"
    return row, title


# -- E5: what the trained bot does on each pattern -----------------------------------------------
def e5_claims(seeds, tables: Sequence[dict], score_if_000: Sequence[dict]):
    """(two check rows, title) for "leaps when lava is directly ahead and steps everywhere else".

    `tables`: per seed, P(LEAP) keyed "000".."111"; `score_if_000`: per seed, {"own": exact score,
    "step": with P(LEAP | 000) = 0, "leap": with P(LEAP | 000) = 1}.
    """
    min_leap = [min(t[b] for b in LEAP_ON) for t in tables]
    max_step = [max(t[b] for b in STEP_ON) for t in tables]
    leaps = all(x > LEAP_AT for x in min_leap)
    steps = all(x < LEAP_AT for x in max_step)
    p000 = [t[FREE] for t in tables]
    steps_000 = all(x < LEAP_AT for x in p000)
    matter = dict(
        kind="narrative",
        id="e5",
        chart="e5",
        constraint="trained, the bot leaps when lava is directly ahead (100, 110) and steps when lava is "
        "2 or 3 tiles ahead (001, 010, 011): the patterns where the move changes the score",
        threshold=f"P(LEAP) > {LEAP_AT} on 100 and 110 and < {LEAP_AT} on 001, 010 and 011, on every seed",
        scope=f"GRPO seeds {seed_list(seeds)}; 101 and 111 never occur on a real floor",
        values=dict(
            seeds=list(seeds), min_leap_on_100_110=rnd_list(min_leap), max_leap_on_001_010_011=rnd_list(max_step)
        ),
        holds=leaps and steps,
    )
    free = dict(
        kind="narrative",
        id="e5-000",
        chart="e5",
        constraint="trained, the bot also steps when no lava is in view (000), as the E5 title's "
        "'everywhere else' says. Why it matters little: from 000 a step and a leap both land "
        "safe, and the best policies leap or step there alike (8 tied best); the values give "
        "each seed's exact score change if it always stepped or always leapt on 000",
        threshold=f"P(LEAP | 000) < {LEAP_AT} on every seed",
        scope=f"GRPO seeds {seed_list(seeds)}",
        values=dict(
            seeds=list(seeds),
            p_leap_000=rnd_list(p000),
            score_change_if_always_step_000=rnd_list(s["step"] - s["own"] for s in score_if_000),
            score_change_if_always_leap_000=rnd_list(s["leap"] - s["own"] for s in score_if_000),
        ),
        holds=steps_000,
    )
    if leaps and steps and steps_000:
        title = E5_TITLE
    elif leaps and steps:
        title = "Trained, the bot leaps when lava is directly ahead and steps when it is two or three tiles ahead"
    elif leaps:
        title = "Trained, the bot leaps when lava is directly ahead, but not only then"
    else:
        title = "Trained, the bot does not reliably leap when lava is directly ahead"
    return [matter, free], title


# -- E2: the slow seed's plateau -----------------------------------------------------------------
def longest_plateau(
    updates: Sequence[int],
    curve: Sequence[float],
    window=(10, 140),
    flat: float = PLATEAU_FLAT,
    below: float = PLATEAU_BELOW,
) -> dict:
    """The longest stretch of evaluation points inside `window` whose scores differ by at most `flat`
    and all sit at least `below` under the curve's last (final) score: {length, start, end, low,
    high}; length 0 (start None) when there is none."""
    u = np.asarray(updates)
    y = np.asarray(curve, dtype=float)
    final = y[-1]
    idx = np.flatnonzero((u >= window[0]) & (u <= window[1]))
    best = dict(length=0, start=None, end=None, low=None, high=None)
    for a_pos, i in enumerate(idx):
        for j in idx[a_pos:]:
            seg = y[i : j + 1]
            if seg.max() - seg.min() > flat + 1e-12 or seg.max() > final - below:
                break
            if u[j] - u[i] > best["length"]:
                best = dict(
                    length=int(u[j] - u[i]), start=int(u[i]), end=int(u[j]), low=rnd(seg.min()), high=rnd(seg.max())
                )
    return best


def plateau_claim(seeds, updates, curves, slow_index: int, window=(10, 140)):
    """(check row, title) for "the slow GRPO seed is stuck on a plateau before it breaks out"."""
    per = [longest_plateau(updates, c, window) for c in curves]
    slow = seeds[slow_index]
    holds = per[slow_index]["length"] >= PLATEAU_MIN
    row = dict(
        kind="narrative",
        id="e2-slow",
        chart="slow",
        constraint="the slowest GRPO seed (lowest score at update 100) is stuck on a plateau before it breaks out",
        threshold=f"within updates {window[0]}..{window[1]}, at least {PLATEAU_MIN} updates whose scores differ "
        f"by at most {PLATEAU_FLAT} and sit at least {PLATEAU_BELOW} below the seed's final score",
        scope=f"the slowest seed ({slow}); every GRPO seed's longest such stretch is listed",
        values=dict(
            seeds=list(seeds),
            slow_seed=slow,
            longest_plateau_updates=[p["length"] for p in per],
            plateau_span=[None if p["start"] is None else [p["start"], p["end"]] for p in per],
        ),
        holds=holds,
    )
    u = list(updates)
    y = curves[slow_index]
    a, b = y[u.index(window[0])], y[u.index(window[1])]
    p = per[slow_index]
    if holds:
        title = (
            f"GRPO seed {slow} sits near {p['low']:.2f} for {p['length']} updates "
            f"({p['start']} to {p['end']}), then climbs to {y[-1]:.2f}"
        )
    elif b >= a + PLATEAU_BELOW:
        title = (
            f"The slowest GRPO seed (seed {slow}) has no plateau: it climbs from {a:.2f} at update "
            f"{window[0]} to {b:.2f} at update {window[1]}"
        )
    else:
        title = (
            f"The slowest GRPO seed (seed {slow}) neither plateaus nor climbs: {a:.2f} at update {window[0]}, "
            f"{b:.2f} at update {window[1]}"
        )
    return row, title


# -- E3b: the critic's blind spot ----------------------------------------------------------------
def e3b_claim(seeds, easy_worst: Sequence[float], hard_best: Sequence[float], forecasts: Sequence[float], draws: int):
    """(check row, title) for "the easy floor's worst run beats the hard floor's best"."""
    sep = [e > h for e, h in zip(easy_worst, hard_best)]
    holds = all(sep)
    row = dict(
        kind="narrative",
        id="e3b",
        chart="e3b",
        constraint="the easy floor's worst run beats the hard floor's best (E3b title)",
        threshold="easy floor's lowest score > hard floor's highest, for every PPO seed",
        scope=f"PPO seeds {seed_list(seeds)}, each playing the same {draws} floors 8 times with the same "
        "generators; easy / hard = highest / lowest group mean",
        values=dict(
            seeds=list(seeds),
            easy_worst=rnd_list(easy_worst),
            hard_best=rnd_list(hard_best),
            critic_forecast=rnd_list(forecasts),
        ),
        holds=holds,
    )
    title = E3B_TITLE if holds else "One forecast from the start line, for every floor"
    return row, title


# -- E2: the ordering of the algorithms ----------------------------------------------------------
def ordering_claim(comparisons: Sequence[dict]):
    """Check row for "GRPO ends above PPO, and PPO above REINFORCE" from the paired comparisons."""
    by = {(c["a"], c["b"]): c for c in comparisons}
    pairs = [by["GRPO", "PPO"], by["PPO", "REINFORCE"]]
    return dict(
        kind="narrative",
        id="e2-order",
        chart="e2",
        constraint="GRPO ends above PPO, and PPO above REINFORCE (E2)",
        threshold="the 95% t interval of the per-seed difference in final score lies above 0, for both "
        "pairs (verdict 'better')",
        scope=f"training seeds {seed_list(pairs[0]['seeds'])}, paired by seed",
        values={"seeds": list(pairs[0]["seeds"])}
        | {f"{c['a']} - {c['b']}": c["per_seed_delta"] for c in pairs}
        | {"verdicts": [f"{c['a']} vs {c['b']}: {c['verdict']}" for c in pairs]},
        holds=all(c["verdict"] == "better" for c in pairs),
    )


def e3a_claim(seeds, all_died: Sequence[bool], clipped: Sequence[int], G: int):
    """Check row for the walkthrough's setup: all runs die and the clip engages. The claim is about
    the one replayed group (the first seed's snapshot); the other seeds' replays are context."""
    return dict(
        kind="narrative",
        id="7",
        chart="e3a",
        constraint=f"in the E3a setup all {words(G)} runs die and the clip engages",
        threshold="every run of the group ends in lava, and at least one step-pass is clipped",
        scope=f"the replayed group (first seed's policy after 20 updates); seeds {seed_list(seeds)} "
        "replayed the same way for context",
        values=dict(seeds=list(seeds), all_died=list(all_died), clipped_step_passes=list(clipped)),
        holds=bool(all_died[0] and clipped[0] > 0),
    )
