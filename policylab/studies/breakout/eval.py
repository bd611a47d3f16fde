"""`policylab breakout eval`: a policy on one environment for N seeded episodes.

Episode i uses seed `world_seed('breakout', 0, i, base=S)` = S + i. Every episode is one store
record; the report files are derived from the store only, so a re-run with the same config
(or a resumed one) writes identical bytes. Wall-clock time goes to `wallclock.json` only.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from policylab.config import claim_out_dir
from policylab.envs.breakout_contract import FEATURES
from policylab.fileio import write_json, write_jsonl
from policylab.progress import say
from policylab.rollout.seeds import world_seed
from policylab.policies.breakout import load_params
from policylab.rollout.store import Store
from policylab.studies.breakout import options
from policylab.studies.breakout.requests import EvalRequest
from policylab.studies.breakout.runner import EpisodeTask, ensure_episodes
from policylab.studies.breakout.video import episode_video


def seeds_for(base: int, episodes: int) -> list[int]:
    return [world_seed("breakout", 0, i, base=base) for i in range(episodes)]


def plan(req: EvalRequest) -> tuple[EpisodeTask, dict, Path]:
    """Check everything the request model could not; return the task, the config recorded in the out
    folder and the store root (nothing is written here)."""
    protocol = options.protocol_from(req)
    params = load_params(req.policy, req.params)
    shadow = options.resolve_preset(req.preset, req.sticky) if req.env == "shadow" else None
    store_root = options.check_run(req)
    task = EpisodeTask(
        env=req.env,
        seeds=tuple(seeds_for(req.seed, req.episodes)),
        policy=req.policy,
        params=params,
        protocol=protocol,
        shadow=shadow,
        preset=req.preset if shadow is not None else None,
    )
    config = {
        "command": "breakout eval",
        "env": req.env,
        "policy": req.policy,
        "params": params,
        "episodes": req.episodes,
        "seed": req.seed,
        "protocol": protocol,
        "preset": task.preset,
        "shadow_overrides": options.shadow_overrides(req.sticky) if shadow is not None else {},
        "video": req.video,
        "store": options.store_label(store_root, req.out),
    }
    return task, config, store_root


def run_eval(req: EvalRequest) -> Path:
    """`policylab breakout eval`: run (or resume) an eval and write its files; returns report.html."""
    task, config, store_root = plan(req)
    claim_out_dir(req.out, config)
    started = time.time()
    with Store(store_root) as store:
        records = ensure_episodes(store, [task], executor=req.executor, ray_address=req.ray_address,
                                  label=f"{req.env} episodes")
        rows = []
        for i, seed in enumerate(task.seeds):  # one replay in memory at a time: an eval may be long
            rec = records[(0, seed)]
            rows.append({"episode": i, "seed": seed, **rec.outcome, "key": rec.key})
            arrays = store.payload(rec.key)
            write_jsonl(req.out / "replays" / f"ep{i:03d}_seed{seed}.jsonl", replay_rows(arrays))
            if i == 0:
                replay0 = arrays
        video = _video(store, task, req.out) if req.video else None
    write_jsonl(req.out / "episodes.jsonl", [{k: v for k, v in r.items() if k != "key"} for r in rows])
    from policylab.studies.breakout.report import write_eval_report

    report = write_eval_report(req.out, config, rows, replay0, video)
    write_json(req.out / "wallclock.json", {"wall_seconds": time.time() - started,
                                            "note": "wall-clock time only; every other file is deterministic"})
    say(f"episodes: {req.out / 'episodes.jsonl'}")
    return report


def replay_rows(arrays: dict[str, np.ndarray]) -> list[dict]:
    """One JSON row per agent step: the action taken and the features after it."""
    obs, act, pol, rew = arrays["obs"], arrays["action"], arrays["policy_action"], arrays["reward"]
    rows = []
    for t in range(rew.size):
        row = {"step": t + 1, "action": int(act[t]), "policy_action": int(pol[t]), "reward": float(rew[t])}
        row.update({name: float(obs[t + 1, j]) for j, name in enumerate(FEATURES)})
        rows.append(row)
    return rows


def _video(store: Store, task: EpisodeTask, out: Path) -> dict:
    """Episode 0 replayed with frame capture as its own record, checked against the episode record."""
    return {"episode": 0, **episode_video(store, task, out, f"video_ep000_seed{task.seeds[0]}.mp4")}
