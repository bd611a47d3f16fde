"""`policylab breakout eval`: a policy on one environment for N seeded episodes.

Episode i uses seed S + i; one store record per episode, reports derived from the store (`wallclock.json` apart)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from policylab.config import claim_out_dir
from policylab.envs.breakout.contract import FEATURES
from policylab.errors import BadInput
from policylab.fileio import atomic_write_text, write_wallclock
from policylab.hashing import canonical_json
from policylab.progress import say
from policylab.result import Result
from policylab.rollout.seeds import world_seed
from policylab.rollout.store import Store
from policylab.studies.breakout import options
from policylab.studies.breakout.episodes.report import write_eval_report
from policylab.studies.breakout.episodes.runner import EpisodeTask, ensure_episodes
from policylab.studies.breakout.episodes.video import episode_video
from policylab.studies.breakout.requests import EvalRequest


def seeds_for(base: int, episodes: int) -> list[int]:
    return [world_seed("breakout", 0, i, base=base) for i in range(episodes)]


@dataclass(frozen=True)
class Plan:
    """An eval, resolved once (`plan`): the stages play the task into the store and report from it."""

    req: EvalRequest
    task: EpisodeTask  # the policy, its protocol and (on the shadow) its preset, resolved
    config: dict  # what OUT/config.json records
    store_root: Path


def plan(req: EvalRequest) -> Plan:
    """Resolve the protocol, the policy and the preset once and check everything the request model could
    not; `BadInput` naming the field, nothing written."""
    protocol = options.protocol_from(req)
    policy = options.resolve_policy(req.policy, req.params)
    shadow = options.resolve_preset(req.preset, req.sticky) if req.env == "shadow" else None
    options.check_pixels(policy.network, req.env, shadow, protocol)
    if req.video and policy.network is not None and policy.network.pixels:
        raise BadInput("video", f"{policy.name} is a pixel network; its episodes record no video (leave out --video)")
    store_root = options.check_run(req)
    task = EpisodeTask(
        env=req.env,
        seeds=tuple(seeds_for(req.seed, req.episodes)),
        policy=policy.name,
        params=policy.params,
        protocol=protocol,
        shadow=shadow,
        preset=req.preset if shadow is not None else None,
        network=policy.network,
    )
    config = {
        "command": "breakout eval",
        "env": req.env,
        "policy": policy.name,
        "params": policy.params,
        **policy.recorded(),
        "episodes": req.episodes,
        "seed": req.seed,
        "protocol": protocol,
        "preset": task.preset,
        "shadow_overrides": options.shadow_overrides(req.sticky) if shadow is not None else {},
        "video": req.video,
        "replays": req.replays,
        "store": options.store_label(store_root, req.out),
    }
    return Plan(req, task, config, store_root)


def run(req: EvalRequest) -> Result:
    """`policylab breakout eval`: run (or resume) an eval and write its files; returns report.html with the
    mean's line the command prints."""
    p = plan(req)
    task = p.task
    claim_out_dir(req.out, p.config)
    started = time.time()
    with Store(p.store_root) as store:
        records = ensure_episodes(
            store, [task], executor=req.executor, ray_address=req.ray_address, label=f"{req.env} episodes"
        )
        rows = [
            {"episode": i, "seed": seed, **records[(0, seed)].outcome, "key": records[(0, seed)].key}
            for i, seed in enumerate(task.seeds)
        ]
        replay0 = store.payload(rows[0]["key"])
        for row in rows[: req.replays]:  # one replay in memory at a time: an episode may be long
            arrays = replay0 if row["episode"] == 0 else store.payload(row["key"])
            _write_rows(req.out / "replays" / f"ep{row['episode']:03d}_seed{row['seed']}.jsonl", replay_rows(arrays))
        video = _video(store, task, req.out) if req.video else None
    _write_rows(req.out / "episodes.jsonl", ({k: v for k, v in r.items() if k != "key"} for r in rows))

    result = write_eval_report(req.out, p.config, rows, replay0, video)
    write_wallclock(req.out, time.time() - started)
    say(f"episodes: {req.out / 'episodes.jsonl'}")
    return result


def replay_rows(arrays: dict[str, np.ndarray]) -> list[dict]:
    """One JSON row per agent step: the action taken and the features after it (a pixel episode's: the lives)."""
    act, pol, rew = arrays["action"], arrays["policy_action"], arrays["reward"]
    steps = int(rew.size)
    columns = {
        "step": range(1, steps + 1),
        "action": act.tolist(),
        "policy_action": pol.tolist(),
        "reward": rew.astype(np.float64).tolist(),
    }
    if "obs" in arrays:
        columns.update({name: arrays["obs"][1:, j].astype(np.float64).tolist() for j, name in enumerate(FEATURES)})
    else:
        columns["lives"] = arrays["lives"][1:].astype(np.int64).tolist()
    names = list(columns)
    return [dict(zip(names, values)) for values in zip(*columns.values())]


def _write_rows(path: Path, rows: Iterable[Mapping]) -> None:
    """JSON lines, each `canonical_json(row)`. Rows here hold only str keys and Python ints, floats,
    bools, None, lists and str (store records or arrays' `tolist()`), for which the C encoder with
    sorted keys writes the same text; a non-finite float (canonical_json writes null) falls back."""
    lines = []
    for row in rows:
        try:
            lines.append(json.dumps(row, sort_keys=True, separators=(",", ":"), allow_nan=False))
        except ValueError:
            lines.append(canonical_json(row))
    atomic_write_text(path, "".join(line + "\n" for line in lines))


def _video(store: Store, task: EpisodeTask, out: Path) -> dict:
    """Episode 0 replayed with frame capture as its own record, checked against the episode record."""
    return {"episode": 0, **episode_video(store, task, out, f"video_ep000_seed{task.seeds[0]}.mp4")}
