"""How runs, steps and numbers are written into the JSON files (the original script's layout).

Every number saved goes through `rnd` (6 decimals) once; weights keep 4 decimals, gradients and pushes 5."""

from __future__ import annotations

import numpy as np

from policylab.studies.lava_leap.agent import Run, pattern_str
from policylab.studies.lava_leap.floor import LEAP

NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def rnd(x) -> float:
    return float(round(float(x), 6))


def rnd_list(xs) -> list[float]:
    return [rnd(x) for x in xs]


def rounded(a, decimals: int) -> list:
    return np.round(np.asarray(a, dtype=float), decimals).tolist()


def keyed_table(table) -> dict[str, float]:
    """A leap table keyed by pattern bits '000'..'111'."""
    return {format(b, "03b"): rnd(table[b]) for b in range(8)}


def words(n: int) -> str:
    return NUMBER_WORDS[n] if 0 <= n < len(NUMBER_WORDS) else str(n)


def reached_exit(run: Run) -> bool:
    return run.reward == 1.0


def run_info(run: Run, adv: float | None = None) -> dict:
    d = dict(
        path=[int(p) for p in run.path],
        final_tile=int(run.path[-1]),
        reward=rnd(run.reward),
        steps=len(run.actions),
        moves="".join("SL"[a] for a in run.actions),
        patterns=[pattern_str(s) for s in run.states],
        reached_exit=reached_exit(run),
    )
    if adv is not None:
        d["advantage"] = rnd(adv)
    return d


def fall_kind(run: Run, lava: np.ndarray) -> str:
    """'exit'; 'coin flip' (a LEAP from just before a 2-wide channel that landed on its far half,
    the one loss no policy can avoid); or 'misstep'."""
    end = int(run.path[-1])
    if reached_exit(run):
        return "exit"
    start = int(run.path[-2])
    far_half = end >= 2 and lava[end - 1] and not lava[end - 2]
    if far_half and run.actions[-1] == LEAP and start == end - 2:
        return "coin flip"
    return "misstep"
