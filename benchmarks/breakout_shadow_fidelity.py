"""Fidelity probe: the same v3-family policies on real ALE Breakout and on the shadow simulator.

Runs `--candidates` random v3-family parameter sets (plus the v3 defaults) for `--episodes`
seeds each under the default ALE protocol (frameskip 4, sticky 0.25, FIRE whenever no ball is in
play, `--max-steps` agent steps) on both sides, and prints per-candidate mean scores, the
Spearman rank correlation, score ratios and feature means (ball |vx|, |vy|, paddle |dx|).
ALE features come straight from RAM (ball x = ram[99]-49, y = ram[101]+9, paddle = ram[72]-47).

    .venv/bin/python benchmarks/breakout_shadow_fidelity.py --candidates 20 --episodes 4 --preset atari
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from ale_py import ALEInterface, LoggerMode, roms

from policylab.envs.breakout_shadow import ShadowBreakout
from policylab.policies.breakout import V3_DEFAULTS, V3_SPACE, breakout_policy_v3
from policylab.stats import spearman

ALE_PADDLE_W = 16.0


def ale_episode(params: dict, seed: int, max_steps: int, sticky: float = 0.25, frameskip: int = 4) -> dict:
    """One ALE episode under the default protocol; returns score and RAM feature means."""
    ALEInterface.setLoggerMode(LoggerMode.Error)
    ale = ALEInterface()
    ale.setInt("random_seed", int(seed))
    ale.setFloat("repeat_action_probability", float(sticky))
    ale.setInt("frame_skip", 1)
    ale.loadROM(roms.get_rom_path("breakout"))
    acts = ale.getMinimalActionSet()
    ale.reset_game()
    obs = np.zeros((1, 9), dtype=np.float32)
    prev = None
    vx, vy, dp = [], [], []
    score = 0
    steps = 0
    for _ in range(max_steps):
        a = int(breakout_policy_v3(obs, params)[0])
        for _f in range(frameskip):
            score += ale.act(acts[a])
        steps += 1
        ram = ale.getRAM()
        inp = ram[101] != 0
        bx, by = (float(ram[99]) - 49.0, float(ram[101]) + 9.0) if inp else (0.0, 0.0)
        px = float(ram[72]) - 47.0
        if prev is not None and inp and prev[2]:
            obs[0, 2], obs[0, 3] = bx - prev[0], by - prev[1]
        else:
            obs[0, 2], obs[0, 3] = 0.0, 0.0
        obs[0, 0], obs[0, 1], obs[0, 4], obs[0, 5], obs[0, 6] = bx, by, float(inp), px, ALE_PADDLE_W
        obs[0, 7], obs[0, 8] = ale.lives(), score
        if prev is not None:
            dp.append(abs(px - prev[3]))
        vx.append(abs(obs[0, 2]))
        vy.append(abs(obs[0, 3]))
        prev = (bx, by, inp, px)
        if ale.game_over():
            break
    return {"score": score, "steps": steps, "vx": float(np.mean(vx)), "vy": float(np.mean(vy)),
            "dp": float(np.mean(dp)) if dp else 0.0}


def shadow_episodes(params: dict, seeds: list[int], max_steps: int, preset: str) -> list[dict]:
    env = ShadowBreakout(len(seeds), preset, seeds=seeds, max_steps=max_steps)
    obs = env.reset()
    prev_px = obs[:, 5].copy()
    vx = np.zeros(len(seeds))
    vy = np.zeros(len(seeds))
    dp = np.zeros(len(seeds))
    nstep = np.zeros(len(seeds))
    alive = np.ones(len(seeds), dtype=bool)
    for _ in range(max_steps):
        obs, _r, term, trunc, _ = env.step(breakout_policy_v3(obs, params))
        vx += np.abs(obs[:, 2]) * alive
        vy += np.abs(obs[:, 3]) * alive
        dp += np.abs(obs[:, 5] - prev_px) * alive
        nstep += alive
        prev_px = obs[:, 5].copy()
        alive &= ~(term | trunc)
        if not alive.any():
            break
    return [{"score": int(s), "steps": int(n), "vx": a / n, "vy": b / n, "dp": c / max(n - 1, 1)}
            for s, n, a, b, c in zip(env.score, nstep, vx, vy, dp)]


def random_candidates(n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [{k: float(np.round(rng.uniform(lo, hi), 2)) for k, (lo, hi) in V3_SPACE.items()} for _ in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--candidates", type=int, default=20, help="random v3-family candidates (plus v3 defaults)")
    ap.add_argument("--episodes", type=int, default=4, help="seeds per candidate on each side")
    ap.add_argument("--shadow-episodes", type=int, default=64, help="seeds per candidate on the shadow side")
    ap.add_argument("--max-steps", type=int, default=1800, help="agent steps per episode")
    ap.add_argument("--preset", default="atari", help="shadow preset name or JSON file")
    ap.add_argument("--pool-seed", type=int, default=12345, help="seed of the random candidate pool")
    ap.add_argument("--json", default=None, help="write per-candidate results here")
    args = ap.parse_args()
    cands = [dict(V3_DEFAULTS)] + random_candidates(args.candidates, args.pool_seed)
    rows = []
    t0 = time.time()
    for k, prm in enumerate(cands):
        ale_rows = [ale_episode(prm, s, args.max_steps) for s in range(args.episodes)]
        sh_rows = shadow_episodes(prm, list(range(1000, 1000 + args.shadow_episodes)), args.max_steps, args.preset)
        row = {"candidate": k, "params": prm}
        for side, rs in (("ale", ale_rows), ("shadow", sh_rows)):
            for f in ("score", "steps", "vx", "vy", "dp"):
                row[f"{side}_{f}"] = float(np.mean([r[f] for r in rs]))
        rows.append(row)
        print(f"c{k:02d} ale {row['ale_score']:7.1f} shadow {row['shadow_score']:7.1f}  "
              f"vx {row['ale_vx']:.2f}/{row['shadow_vx']:.2f} vy {row['ale_vy']:.2f}/{row['shadow_vy']:.2f} "
              f"dp {row['ale_dp']:.2f}/{row['shadow_dp']:.2f} steps {row['ale_steps']:.0f}/{row['shadow_steps']:.0f}",
              flush=True)
    a = [r["ale_score"] for r in rows]
    s = [r["shadow_score"] for r in rows]
    ratio = [abs(y / x - 1) if x > 0 else float("inf") for x, y in zip(a, s)]
    summary = {
        "spearman": spearman(a, s), "median_abs_ratio_minus_1": float(np.median(ratio)),
        **{f"{side}_{f}": float(np.mean([r[f"{side}_{f}"] for r in rows]))
           for side in ("ale", "shadow") for f in ("score", "vx", "vy", "dp", "steps")},
        "wall_s": time.time() - t0,
    }
    print(json.dumps(summary, indent=2))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"summary": summary, "rows": rows}, fh, indent=2)


if __name__ == "__main__":
    main()
