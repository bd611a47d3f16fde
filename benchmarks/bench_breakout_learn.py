"""`policylab breakout learn` measured: training throughput, the default run's ALE result, and the
transfer table (a network learned on each shadow preset, validated on ALE).

Parts (each records its own key of results/breakout_learn.json, so they can run at different times):

- ``throughput``: agent-steps/s of env and learner together, per update (median over updates after
  the first); the first --updates updates of the default config and of each --compare LABEL:FIELD=VALUE,...
  variant, run in alternating rounds (--rounds) so that every config meets the same load; each
  label records its median round and the ratio of the default's to its own rate in the same rounds.
- ``preset``: the whole command (`policylab breakout learn --preset P`, defaults otherwise: learning,
  export, the ALE validation against v3 and the search pick, the transfer gap over 100 episodes per
  env) in a subprocess; wall time, the learner's median steps/s, the network's ALE 20-seed mean with
  its interval, both verdicts and the three policies' shadow/ALE ratios. The default preset's row is
  the issue's goal check.
- ``recipe``: the same whole command on `ale-exact` with a recipe's options (``--options``), recorded under
  ``recipes.LABEL`` with the validation's median and the share of seeds that clear the first wall (432).
- ``split``: where an update's time goes, for each --compare LABEL:FIELD=VALUE,... (request fields), their
  learners side by side in one process and updated in turn: --updates updates after two untimed ones,
  each timed as its rollout (the shards playing, the network's forward passes included) and its PPO update
  (of which: the shards' threads differentiating their chunks; the rest is the optimiser's serial part),
  recorded under ``split.LABEL`` (or ``KEY.LABEL`` with --key; rows of other labels stay) with ratios to the
  first label's. Code against code (a change to the update) is timed in alternating processes, each recording
  its own labels under one --key.

Usage:

    nice -n 19 .venv/bin/python benchmarks/bench_breakout_learn.py throughput --compare one_thread:threads=1 \
        --compare previous_recipe:envs=512,epochs=4,minibatch=1024,activation=tanh
    nice -n 19 .venv/bin/python benchmarks/bench_breakout_learn.py preset --preset atari-cal [--preset go-v1 ...]
    nice -n 19 .venv/bin/python benchmarks/bench_breakout_learn.py preset --preset ale-exact --seed 1
    .venv/bin/python benchmarks/bench_breakout_learn.py recipe --label v5_late \
        --options "--protocol v5 --late-starts 0.5 --gap-episodes 20"
    .venv/bin/python benchmarks/bench_breakout_learn.py split --updates 16 --compare v5_recipe:recipe=v5 \
        --compare v5_late220_h64:protocol=v5,late_starts=0.5,late_score=220,hidden=64
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from results_file import record, stamped

ROOT = Path(__file__).resolve().parents[1]
FIRST_WALL = 432  # points of the first wall: 18 bricks in each of the rows worth 1, 1, 4, 4, 7, 7


def merge_into(key: str):
    def merge(data: dict, result: dict) -> None:
        data.setdefault(key, {}).update(result)

    return merge


def throughput_once(updates: int, overrides: dict) -> dict:
    """The first `updates` updates of the default config with `overrides`, timed per update."""
    from policylab.config import validated
    from policylab.learning.learner import TIMING
    from policylab.studies.breakout.learn.learner import train
    from policylab.studies.breakout.learn.plan import plan
    from policylab.studies.breakout.requests import LearnRequest

    out = ROOT / "runs" / "bench-learn" / "throughput"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    req = validated(LearnRequest, {"out": out, "checkpoint_every": updates, **overrides})
    p = plan(req)
    t0 = time.perf_counter()
    train(p, stop_after=updates)
    wall = time.perf_counter() - t0
    rates = json.loads((out / TIMING).read_text())["steps_per_s"]
    fields = (
        "envs",
        "rollout",
        "epochs",
        "minibatch",
        "lr",
        "activation",
        "hidden",
        "layers",
        "history",
        "wall",
        "threads",
    )
    return {
        "steps_per_s_median": float(np.median(rates[1:])),
        "steps_per_s_per_update": rates,
        "wall_s": wall,
        "updates": updates,
        "steps_per_update": req.envs * req.rollout,
        "config": {k: getattr(req, k) for k in fields},
    }


def throughput(updates: int, rounds: int, variants: dict[str, dict]) -> dict:
    """Alternating rounds of the default and each variant; per label the median round, and each
    variant's rate as a fraction of the default's in the same rounds."""
    runs: dict[str, list[dict]] = {"default": [], **{k: [] for k in variants}}
    for _ in range(rounds):
        for label, overrides in {"default": {}, **variants}.items():
            runs[label].append(throughput_once(updates, overrides))
    out = {}
    for label, rs in runs.items():
        rates = [r["steps_per_s_median"] for r in rs]
        mid = rs[int(np.argsort(rates)[len(rates) // 2])]
        out[label] = {**mid, "rounds": rounds, "steps_per_s_rounds": rates, "load_average_after": os.getloadavg()[0]}
        if label != "default":
            ratios = [d["steps_per_s_median"] / r["steps_per_s_median"] for d, r in zip(runs["default"], rs)]
            out[label]["default_over_this"] = float(np.median(ratios))
    return out


class Timed:
    """One learner of a `split` comparison, its update timed in parts: the rollout, the PPO update and the
    share of it spent in the shards' threads (forward and backward passes)."""

    def __init__(self, overrides: dict):
        from policylab.config import validated
        from policylab.studies.breakout.learn.learner import Learner
        from policylab.studies.breakout.learn.plan import plan
        from policylab.studies.breakout.requests import LearnRequest

        self.overrides = overrides
        self.req = validated(LearnRequest, {"out": ROOT / "runs" / "bench-learn" / "split", **overrides})
        self.learner = Learner(plan(self.req))
        self.threads = self.learner.ppo.threads
        self.plain_map = self.threads.map
        self.in_map = 0.0
        self.rows: list[tuple[float, float, float]] = []

    def _timed_map(self, fn, items):
        t = time.perf_counter()
        result = self.plain_map(fn, items)
        self.in_map += time.perf_counter() - t
        return result

    def update(self, keep: bool) -> None:
        t0 = time.perf_counter()
        batch, *_ = self.learner.rollout()
        t1 = time.perf_counter()
        self.in_map, self.threads.map = 0.0, self._timed_map
        self.learner.ppo.update(batch)
        self.threads.map = self.plain_map
        self.learner.done += 1
        if keep:
            self.rows.append((t1 - t0, time.perf_counter() - t1, self.in_map))

    def summary(self) -> dict:
        rollout_s, update_s, grads_s = (float(np.median(c)) for c in zip(*self.rows))
        steps = self.req.envs * self.req.rollout
        return {
            "options": self.overrides,
            "updates": len(self.rows),
            "steps_per_update": steps,
            "rollout_s": round(rollout_s, 4),
            "ppo_update_s": round(update_s, 4),
            "ppo_threads_s": round(grads_s, 4),
            "ppo_share": round(update_s / (rollout_s + update_s), 3),
            "steps_per_s": round(steps / (rollout_s + update_s)),
        }


def split(updates: int, variants: dict[str, dict]) -> dict:
    """Each variant's learner, built side by side in this process, updated in turn (so a change of the
    machine's speed meets them alike): median seconds per update of its parts, after two untimed updates
    each (they warm the allocator and the threads); each variant's update and whole-update times as
    ratios to the first's."""
    from policylab.learning import shards

    shards.deterministic_torch()
    timed = {label: Timed(overrides) for label, overrides in variants.items()}
    for k in range(updates + 2):
        for t in timed.values():
            t.update(keep=k >= 2)
    out = {label: t.summary() for label, t in timed.items()}
    first = out[next(iter(out))]
    for row in out.values():
        row["ppo_update_over_first"] = round(row["ppo_update_s"] / first["ppo_update_s"], 3)
        row["steps_per_s_over_first"] = round(row["steps_per_s"] / first["steps_per_s"], 3)
        row["load_average_after"] = round(os.getloadavg()[0], 2)
    return out


def preset_key(preset: str, steps: int | None, seed: int | None) -> str:
    """Where a run is recorded: the preset, then @STEPS and #seedN where they differ from the default."""
    return preset + ("" if steps is None else f"@{steps}") + ("" if seed is None else f"#seed{seed}")


def ale_mean_ci95(v: dict) -> list[float]:
    """The network's ALE mean interval: over the validation on a physics preset; on an exact one over the
    confirmation seeds, which are the first of the transfer gap's ALE episodes."""
    from policylab.stats import distribution

    conf = v["validation"]["ale_confirmation"]
    if conf is None:
        return v["validation"]["distributions"]["network"]["mean_ci95"]
    net = next(r for r in v["transfer_gap"]["rows"] if r["key"] == "network")
    return distribution(net["ale_scores"][: conf["of"]])["mean_ci95"]


def preset_run(preset: str, steps: int | None, seed: int | None, extra: list[str] = (), label: str = "") -> dict:
    """The whole default command on `preset` (or with --steps / --seed, or a recipe's `extra` options), in a
    fresh folder, as a user runs it."""
    key = label or preset_key(preset, steps, seed)
    out = ROOT / "runs" / "bench-learn" / key.replace("#", "-").replace("@", "-")
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "policylab.cli", "breakout", "learn", "--preset", preset, "--out", str(out)]
    cmd += [] if steps is None else ["--steps", str(steps)]
    cmd += [] if seed is None else ["--seed", str(seed)]
    cmd += list(extra)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    data = json.loads((out / "learn.json").read_text())
    v = data["validation"]
    net = v["validation"]["distributions"]["network"]
    gap = {
        r["key"]: {
            "policy": r["policy"],
            "shadow_mean": r["shadow_mean"],
            "shadow_ci95": r["shadow_ci95"],
            "ale_mean": r["ale_mean"],
            "ale_ci95": r["ale_ci95"],
            "ratio": r["ratio_shadow_over_ale"],
            "ratio_ci95": r["ratio_ci95"],
        }
        for r in v["transfer_gap"]["rows"]
    }
    scores = np.array(net["scores"])
    return {
        "command": "policylab breakout learn " + " ".join(cmd[5:]).replace(str(ROOT) + "/", ""),
        "wall_s": wall,
        "agent_steps": data["agent_steps"],
        "updates": data["updates"],
        "learner_steps_per_s_median": data["timing"]["median_steps_per_s"],
        "final_shadow_return": data["final_return_mean"],
        "validation_env": v["validation"]["env"],
        "validation_episodes": v["validation"]["episodes"],
        "validation_mean": net["mean"],
        "validation_mean_ci95": net["mean_ci95"],
        "validation_median": float(np.median(scores)),
        "validation_share_clearing_first_wall": float(np.mean(scores >= FIRST_WALL)),
        "protocol": data["config"]["protocol"],
        # the ALE episodes: the whole validation on a physics preset, the confirmation sample on an exact one
        "ale_mean": v["goals"]["ale_mean"],
        "ale_mean_ci95": ale_mean_ci95(v),
        "ale_confirmation": None
        if v["validation"]["ale_confirmation"] is None
        else {k: v["validation"]["ale_confirmation"][k] for k in ("of", "equal")},
        "vs": {
            k: {
                "against": c["against"],
                "mean_delta": c["paired_delta"]["mean_delta"],
                "ci95": c["paired_delta"]["ci95"],
                "verdict": c["verdict"],
            }
            for k, c in v["validation"]["comparisons"].items()
        },
        "gap_episodes": v["transfer_gap"]["episodes"],
        "transfer_gap": gap,
        "goals": v["goals"],
        "config": {
            k: data["config"][k]
            for k in ("envs", "rollout", "epochs", "minibatch", "lr", "activation", "threads", "steps")
        },
        "load_average_after": os.getloadavg()[0],
    }


def compared(items: list[str]) -> dict[str, dict]:
    """--compare LABEL:FIELD=VALUE,... options as {label: {field: value}}."""
    variants = {}
    for item in items:
        label, _, sets = item.partition(":")
        variants[label] = dict(kv.split("=", 1) for kv in sets.split(",") if kv)
    return variants


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("part", choices=["throughput", "preset", "recipe", "split"])
    ap.add_argument("--updates", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--preset", action="append", default=[])
    ap.add_argument(
        "--steps", type=int, default=None, help="preset: a budget other than the default (recorded under PRESET@STEPS)"
    )
    ap.add_argument(
        "--seed",
        type=int,
        default=None,
        help="preset: a training seed other than the default (recorded under PRESET#seedN)",
    )
    ap.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="LABEL:FIELD=VALUE,...",
        help="throughput: a variant of the default config, timed in the same rounds; split: a learner to time",
    )
    ap.add_argument("--label", default="", help="recipe: the key its run is recorded under (results' recipes)")
    ap.add_argument("--key", default="split", help="split: the results' key its rows are recorded under")
    ap.add_argument("--options", default="", help="recipe: the learn options of the recipe, as one string")
    args = ap.parse_args()
    import torch

    note = f"torch {torch.__version__}, shared 2-core machine (other jobs running)"
    if args.part == "throughput":
        variants = compared(args.compare)
        record(
            "breakout_learn",
            stamped(throughput(args.updates, args.rounds, variants)),
            lambda data, result: data.__setitem__("throughput", result),
            machine_note=note,
        )
        return
    if args.part == "split":
        variants = compared(args.compare)
        if not variants:
            raise SystemExit("split needs --compare LABEL:FIELD=VALUE,... (one or more)")
        rows = {label: stamped(row) for label, row in split(args.updates, variants).items()}
        record("breakout_learn", rows, merge_into(args.key), machine_note=note)
        return
    if args.part == "recipe":
        if not args.label:
            raise SystemExit("recipe needs --label")
        run = preset_run("ale-exact", args.steps, args.seed, shlex.split(args.options), args.label)
        record("breakout_learn", {args.label: stamped(run)}, merge_into("recipes"), machine_note=note)
        return
    for preset in args.preset or ["atari-cal"]:
        key = preset_key(preset, args.steps, args.seed)
        record(
            "breakout_learn",
            {key: stamped(preset_run(preset, args.steps, args.seed))},
            merge_into("presets"),
            machine_note=note,
        )


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
