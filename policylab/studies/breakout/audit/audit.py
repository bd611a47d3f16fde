"""`policylab breakout audit`: one policy on both environments, on the same seeds.

With `--candidates`, ALE also plays a disjoint seed set (S+N .. S+2N-1): its Spearman with itself is the ceiling."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from policylab.config import claim_out_dir, load_json_file
from policylab.errors import BadInput
from policylab.fileio import write_json, write_wallclock
from policylab.policies.breakout import validate_params
from policylab.progress import say
from policylab.provenance import versions
from policylab.rollout.store import Store
from policylab.stats import distribution, pearson, spearman, spearman_ci
from policylab.studies.breakout import options
from policylab.studies.breakout.audit.gaps import decision, gap_audit
from policylab.studies.breakout.audit.report import write_audit_report
from policylab.studies.breakout.episodes.eval import seeds_for
from policylab.studies.breakout.episodes.runner import EpisodeTask, ensure_episodes
from policylab.studies.breakout.requests import MAX_CANDIDATES, AuditRequest

FEATURE_GAPS = ("ball_abs_vx_mean", "ball_abs_vy_mean", "paddle_abs_delta_mean", "steps", "reward_count")


def load_candidates(path: Path, policy: str) -> list[dict]:
    data = load_json_file(path, "candidates")
    if not isinstance(data, list) or not data:
        raise BadInput("candidates", f"{path} must hold a non-empty JSON list of {{candidate_id, params}}")
    if len(data) > MAX_CANDIDATES:
        raise BadInput("candidates", f"{path} holds {len(data):,} candidates; at most {MAX_CANDIDATES:,}")
    seen, out = set(), []
    for i, item in enumerate(data):
        if not isinstance(item, dict) or set(item) != {"candidate_id", "params"}:
            raise BadInput(f"candidates[{i}]", "each entry needs exactly the keys candidate_id and params")
        cid = item["candidate_id"]
        if not isinstance(cid, str) or not cid or cid in seen:
            raise BadInput(f"candidates[{i}].candidate_id", f"must be a unique non-empty string, got {cid!r}")
        seen.add(cid)
        params = validate_params(policy, item["params"], f"candidates[{i}].params")
        out.append({"candidate_id": cid, "params": params})
    if len(out) < 3:
        raise BadInput("candidates", "a rank correlation needs at least 3 candidates")
    return out


@dataclass(frozen=True)
class Plan:
    """An audit, resolved once (`plan`): the tasks the stages play and what the report is built from."""

    req: AuditRequest
    tasks: dict[tuple[str, str], EpisodeTask]  # (candidate or "main", env) -> the policy on that env, resolved
    config: dict  # what OUT/config.json records
    store_root: Path
    seeds: tuple[int, ...]  # the audit seeds, played on both envs
    reference: tuple[int, ...]  # ALE's disjoint second seed set (the candidates' noise ceiling)
    candidates: list[dict]  # checked {candidate_id, params}


def plan(req: AuditRequest) -> Plan:
    """Resolve the protocol, the policy, the presets and the candidates once and check everything the
    request model could not; `BadInput` naming the field, nothing written."""
    protocol = options.protocol_from(req)
    policy = options.resolve_policy(req.policy, req.params)
    if policy.network is not None and policy.network.pixels:
        raise BadInput(
            "policy",
            f"{policy.name} is a pixel network: its episodes record no ball and paddle features to audit "
            "(use breakout eval or transfer)",
        )
    if policy.network is not None and req.candidates is not None:
        raise BadInput("candidates", "candidates are parameter sets of a registered policy; a network file has none")
    params = policy.params
    shadow = options.resolve_preset(req.preset, req.sticky)
    compare = (
        None if req.compare_preset is None else options.resolve_preset(req.compare_preset, req.sticky, "compare_preset")
    )
    candidates = load_candidates(req.candidates, req.policy) if req.candidates else []
    store_root = options.check_run(req)
    seeds = tuple(seeds_for(req.seed, req.episodes))
    reference = tuple(seeds_for(req.seed, 2 * req.episodes)[req.episodes :])
    overrides = options.shadow_overrides(req.sticky)

    def task(env: str, p: dict, s: tuple[int, ...], compared: bool = False) -> EpisodeTask:
        if env == "ale":
            return EpisodeTask(env, s, policy.name, p, protocol, network=policy.network)
        return EpisodeTask(
            env,
            s,
            policy.name,
            p,
            protocol,
            compare if compared else shadow,
            req.compare_preset if compared else req.preset,
            network=policy.network,
        )

    tasks = {("main", "shadow"): task("shadow", params, seeds), ("main", "ale"): task("ale", params, seeds)}
    for c in candidates:
        cid = c["candidate_id"]
        tasks[(cid, "shadow")] = task("shadow", c["params"], seeds)
        tasks[(cid, "ale")] = task("ale", c["params"], seeds)
        tasks[(cid, "ale_reference")] = task("ale", c["params"], reference)
        if req.compare_preset is not None:
            tasks[(cid, "shadow_compare")] = task("shadow", c["params"], seeds, compared=True)
    config = {
        "command": "breakout audit",
        "policy": policy.name,
        "params": params,
        **policy.recorded(),
        "episodes": req.episodes,
        "seed": req.seed,
        "protocol": protocol,
        "preset": req.preset,
        "shadow_overrides": overrides,
        "candidates": candidates,
        "store": options.store_label(store_root, req.out),
    }
    if req.compare_preset is not None:
        config["compare_preset"] = req.compare_preset
    return Plan(req, tasks, config, store_root, seeds, reference, candidates)


def side(rows: list[dict]) -> dict:
    """The original's side summary: {episodes, score, rows, done_count, steps_mean}."""
    return {
        "episodes": len(rows),
        "score": distribution([r["score"] for r in rows]),
        "rows": rows,
        "done_count": sum(1 for r in rows if r["done"]),
        "steps_mean": sum(r["steps"] for r in rows) / len(rows),
    }


def paired_rows(shadow: list[dict], ale: list[dict]) -> list[dict]:
    """The original audit's paired_by_seed rows, with go -> shadow and atari -> ale."""
    out = []
    for s, a in zip(shadow, ale):
        assert s["seed"] == a["seed"]
        out.append(
            {
                "seed": s["seed"],
                "shadow_score": s["score"],
                "ale_score": a["score"],
                "score_delta_ale_minus_shadow": a["score"] - s["score"],
                "shadow_steps": s["steps"],
                "ale_steps": a["steps"],
                "shadow_first_reward_step": s["first_reward_step"],
                "ale_first_reward_step": a["first_reward_step"],
                "shadow_reward_count": s["reward_count"],
                "ale_reward_count": a["reward_count"],
            }
        )
    return out


def _mean(rows: list[dict], field: str) -> float:
    return sum(float(r[field]) for r in rows) / len(rows)


def candidate_rows(candidates: list[dict], rows: dict, shadow_key: str = "shadow") -> list[dict]:
    out = []
    for c in candidates:
        cid = c["candidate_id"]
        s, a, ref = rows[(cid, shadow_key)], rows[(cid, "ale")], rows[(cid, "ale_reference")]
        sm, am = _mean(s, "score"), _mean(a, "score")
        gaps = {}
        for f in FEATURE_GAPS:
            sv, av = _mean(s, f), _mean(a, f)
            gaps[f] = {"shadow": sv, "ale": av, "ratio_shadow_over_ale": sv / av if av else None}
        out.append(
            {
                "candidate_id": cid,
                "params": c["params"],
                "shadow_score_mean": sm,
                "ale_score_mean": am,
                "ale_reference_score_mean": _mean(ref, "score"),
                "score_ratio_shadow_over_ale": sm / am if am else None,
                "shadow_scores": [r["score"] for r in s],
                "ale_scores": [r["score"] for r in a],
                "ale_reference_scores": [r["score"] for r in ref],
                "feature_gaps": gaps,
            }
        )
    return out


def rank_correlation(cands: list[dict], reference_seeds: tuple[int, ...]) -> dict:
    sx = [c["shadow_score_mean"] for c in cands]
    ax = [c["ale_score_mean"] for c in cands]
    rx = [c["ale_reference_score_mean"] for c in cands]
    return {
        "pearson": pearson(sx, ax),
        "spearman": spearman(sx, ax),
        "sample_size": len(cands),
        "spearman_ci95": spearman_ci(sx, ax),
        "reference_self_spearman": spearman(ax, rx),
        "reference_seeds": list(reference_seeds),
        "note": "reference_self_spearman: ALE candidate means on the audit seeds vs on a disjoint seed set; "
        "the agreement seed noise allows (null when ALE gives every candidate the same mean)",
    }


def feature_summary(cands: list[dict]) -> dict:
    """Pooled candidate means per feature on both envs, with the shadow/ALE ratio."""
    out = {}
    for f in FEATURE_GAPS:
        sv = sum(c["feature_gaps"][f]["shadow"] for c in cands) / len(cands)
        av = sum(c["feature_gaps"][f]["ale"] for c in cands) / len(cands)
        out[f] = {"shadow": sv, "ale": av, "ratio_shadow_over_ale": sv / av if av else None}
    return out


def _fidelity(cands: list[dict], rank: dict) -> dict:
    ratios = sorted(
        abs(c["score_ratio_shadow_over_ale"] - 1) for c in cands if c["score_ratio_shadow_over_ale"] is not None
    )
    mid = len(ratios) // 2
    median = None if not ratios else (ratios[mid] if len(ratios) % 2 else (ratios[mid - 1] + ratios[mid]) / 2)
    return {
        "spearman": rank["spearman"],
        "pearson": rank["pearson"],
        "spearman_ci95": rank["spearman_ci95"],
        "reference_self_spearman": rank["reference_self_spearman"],
        "median_abs_score_ratio_minus_1": median,
        "features": feature_summary(cands),
    }


def compare_section(
    compare_preset: str, preset: str, candidates: list[dict], rows: dict, reference: tuple[int, ...], cands: list[dict]
) -> dict:
    """The same candidates on a second shadow preset, side by side with the audited one."""
    other = candidate_rows(candidates, rows, "shadow_compare")
    rank_other = rank_correlation(other, reference)
    return {
        "presets": [preset, compare_preset],
        "side_by_side": {
            preset: _fidelity(cands, rank_correlation(cands, reference)),
            compare_preset: _fidelity(other, rank_other),
        },
        "candidates": [
            {
                "candidate_id": a["candidate_id"],
                "ale_score_mean": a["ale_score_mean"],
                f"shadow_score_mean[{preset}]": a["shadow_score_mean"],
                f"shadow_score_mean[{compare_preset}]": b["shadow_score_mean"],
                f"score_ratio[{preset}]": a["score_ratio_shadow_over_ale"],
                f"score_ratio[{compare_preset}]": b["score_ratio_shadow_over_ale"],
            }
            for a, b in zip(cands, other)
        ],
    }


def run(req: AuditRequest) -> Path:
    """`policylab breakout audit`: run (or resume) the audit; returns audit.html."""
    p = plan(req)
    tasks, config, reference, candidates = p.tasks, p.config, p.reference, p.candidates
    claim_out_dir(req.out, config)
    started = time.time()
    order = list(tasks)
    with Store(p.store_root) as store:
        records = ensure_episodes(
            store, [tasks[k] for k in order], executor=req.executor, ray_address=req.ray_address, label="audit episodes"
        )
        rows = {}
        for ti, k in enumerate(order):
            rows[k] = [
                {"episode": i, "seed": s, **records[(ti, s)].outcome, "key": records[(ti, s)].key}
                for i, s in enumerate(tasks[k].seeds)
            ]
    shadow, ale = side(rows[("main", "shadow")]), side(rows[("main", "ale")])
    paired = paired_rows(shadow["rows"], ale["rows"])
    cands = candidate_rows(candidates, rows) if candidates else []
    rank = rank_correlation(cands, reference) if candidates else None
    gaps = gap_audit(shadow, ale, paired, rank)
    compare = (
        compare_section(req.compare_preset, req.preset, candidates, rows, reference, cands)
        if req.compare_preset is not None
        else None
    )
    data = {
        "objective": {
            "name": "Breakout env gap audit",
            "policy": config["policy"],
            "params": config["params"],
            **({"network": config["network"]} if "network" in config else {}),
            "shadow": {"preset": req.preset, "overrides": config["shadow_overrides"]},
            "ale": {"protocol": config["protocol"]},
            "seeds": list(p.seeds),
            "naming": "go -> shadow, atari -> ale (the original's field names, renamed)",
        },
        "comparison": {"shadow": shadow, "ale": ale, "paired_by_seed": paired},
        "gap_audit": gaps,
        "decision": decision(gaps, shadow, ale),
        "rank_correlation": rank,
        "candidates": cands,
        "compare": compare,
        "evidence": {"store": options.store_label(p.store_root, req.out), "provenance": versions()},
    }
    write_json(req.out / "audit.json", data)

    html = write_audit_report(req.out, data)
    write_wallclock(req.out, time.time() - started)
    say(data["decision"]["statement"])
    return html
