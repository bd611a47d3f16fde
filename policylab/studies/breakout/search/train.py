"""`policylab breakout train`: search in the shadow simulator, validate on ALE, give an honest verdict.

Stages (each reads and writes the store, so a killed run resumes and ends with the same report):

1. **search**: every candidate of the search space is played on the search env (shadow by
   default) on the search seeds; one store record per (candidate, env, seed).
2. **select**: candidates are sorted by the selection rule (default: the original's
   "low_score_count asc, score_min desc, score_mean desc"); with ``--screen-top K`` the top K are
   re-played on ALE for M screening episodes and the pick is made by the same rule on ALE
   (multi-fidelity: the cheap simulator proposes, the reference environment decides).
3. **validate**: the pick and the baseline on ALE on fresh validation seeds, disjoint from every
   seed used for selection, paired by seed.
4. **decide**: paired mean delta with a bootstrap 95% interval; verdict ``improved`` if the
   interval lies above 0, ``worse`` if below, else ``inconclusive``; the original's boolean
   ``new_policy_not_lower_than_previous_best`` beside it.
5. **report**: params JSON, manifest with the rerun command, report.json + report.html.

Seeds: search seeds are a range on the search env; screening seeds start at ``--screen-seed``
and validation seeds at ``--validate-seed`` (both through the seed scheme); overlapping ranges are
refused before anything runs.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass
from pathlib import Path

from policylab.config import claim_out_dir
from policylab.envs.breakout.ale import Protocol
from policylab.envs.breakout.params import ShadowParams, load_preset
from policylab.errors import BadInput
from policylab.fileio import write_json
from policylab.policies.breakout_net import NetworkFile
from policylab.progress import say
from policylab.result import command_line
from policylab.rollout.seeds import seed_range, world_seed
from policylab.rollout.store import Store
from policylab.stats import distribution, pearson, spearman, spearman_ci
from policylab.studies.breakout import options
from policylab.studies.breakout.episodes.runner import EpisodeTask, ensure_episodes, run_shadow_group
from policylab.studies.breakout.episodes.video import episode_video
from policylab.studies.breakout.requests import TrainRequest
from policylab.studies.breakout.search.report import write_train_report
from policylab.studies.breakout.search.search_space import grid216, random_candidates, tpe_candidates
from policylab.studies.breakout.search.selection import compare_paired, parse_rule, rank_candidates

SEARCH_POLICY = "breakout_policy_v3"  # the family every candidate belongs to


RUN_ONLY = ("out", "store", "executor", "ray_address")  # where and how a run goes, never what it finds


@dataclass(frozen=True)
class Plan:
    req: TrainRequest
    protocol: dict
    shadow: ShadowParams | None  # the search env's physics, resolved once (shadow search only)
    baseline: options.PolicyChoice
    search_seeds: tuple[int, ...]
    screen_seeds: tuple[int, ...]
    validate_seeds: tuple[int, ...]
    store_root: Path
    config: dict


def _seeds(base: int, n: int) -> tuple[int, ...]:
    return tuple(world_seed("breakout", 0, i, base=base) for i in range(n))


def plan(req: TrainRequest) -> Plan:
    """Check everything the request model could not (nothing is written here)."""
    parse_rule(req.select)
    protocol = options.protocol_from(req)
    shadow = options.resolve_preset(req.preset, req.sticky) if req.search_env == "shadow" else None
    baseline = options.resolve_policy(req.baseline, None, "baseline")
    search = tuple(seed_range(req.search_seeds))
    screen = _seeds(req.screen_seed, req.screen_episodes) if req.screen_top else ()
    validate = _seeds(req.validate_seed, req.validate_episodes)
    if set(validate) & set(search):
        raise BadInput("validate_seed", "validation seeds overlap the search seeds; selection and "
                       "validation never share seeds")
    if set(validate) & set(screen):
        raise BadInput("validate_seed", "validation seeds overlap the screening seeds")
    if req.search_env == "ale" and set(screen) & set(search):
        raise BadInput("screen_seed", "screening seeds overlap the ALE search seeds")
    store_root = options.check_run(req)
    config = req.model_dump(mode="json", exclude=set(RUN_ONLY))
    config.update({"command": "breakout train", "protocol": protocol,
                   "seeds": {"search": list(search), "screen": list(screen), "validate": list(validate)}})
    if baseline.network is not None:  # a network baseline is its file name and content, not its path
        config.update({"baseline": baseline.name, "baseline_network": baseline.network.record})
    return Plan(req, protocol, shadow, baseline, search, screen, validate, store_root, config)


# -- stages -----------------------------------------------------------------------------------------
def _task(p: Plan, env: str, params: dict, seeds: tuple[int, ...], policy: str = SEARCH_POLICY,
          network: NetworkFile | None = None) -> EpisodeTask:
    if env == "ale":
        return EpisodeTask(env=env, seeds=seeds, policy=policy, params=params, protocol=p.protocol, network=network)
    return EpisodeTask(env=env, seeds=seeds, policy=policy, params=params, protocol=p.protocol, shadow=p.shadow,
                       preset=p.req.preset, network=network)


def score_rows(store: Store, p: Plan, env: str, candidates: list[dict], seeds: tuple[int, ...],
               label: str) -> list[dict]:
    """Play every candidate on `env` x `seeds` (skipping stored keys) and summarise each one."""
    tasks = [_task(p, env, c["params"], seeds) for c in candidates]
    records = ensure_episodes(store, tasks, executor=p.req.executor, ray_address=p.req.ray_address, label=label)
    return [candidate_row(cand, [records[(ti, s)].outcome["score"] for s in seeds])
            for ti, cand in enumerate(candidates)]


def candidate_row(cand: dict, scores: list[float]) -> dict:
    """A candidate's summary over its seeds: what the selection rule ranks."""
    d = distribution(scores)
    return {"candidate_id": cand["candidate_id"], "params": cand["params"], "scores": d["scores"],
            "score_mean": d["mean"], "score_median": d["median"], "score_min": d["min"],
            "score_max": d["max"], "score_stdev": d["stdev"], "low_score_count": d["low_score_count"]}


def default_pick() -> dict:
    """What `policylab breakout train` picks on its defaults (shadow-only: its search space, search
    seeds, preset, protocol and selection rule, all read from `TrainRequest`'s defaults), recomputed
    in-process without a store (about 3 s): {"candidate_id", "params", "source"}. The lockstep
    harness and the transfer validation play it as "the search pick"."""
    d = {k: f.default for k, f in TrainRequest.model_fields.items()}
    assert d["space"] == "grid216" and d["search_env"] == "shadow" and d["screen_top"] is None
    seeds = tuple(seed_range(d["search_seeds"]))
    protocol = Protocol(max_steps=d["max_steps"], serve=d["serve"]).model_dump()
    shadow = load_preset(d["preset"])
    cands = grid216()
    tasks = [EpisodeTask("shadow", seeds, SEARCH_POLICY, c["params"], protocol, shadow=shadow, preset=d["preset"])
             for c in cands]
    rows = [candidate_row(cand, [e.outcome["score"] for e in eps])
            for cand, eps in zip(cands, run_shadow_group(tasks))]
    best = rank_candidates(rows, d["select"])[0]
    source = (f"policylab breakout train on its defaults ({d['space']}, search seeds {d['search_seeds']} on the "
              f"shadow preset {d['preset']}, rule '{d['select']}'), recomputed")
    return {"candidate_id": best["candidate_id"], "params": dict(best["params"]), "source": source}


def candidates_for(store: Store, p: Plan) -> list[dict]:
    req = p.req
    if req.space == "grid216":
        return grid216()
    if req.space == "random":
        return random_candidates(req.budget, req.space_seed)

    def score(batch: list[dict]) -> list[float]:
        cands = [{"candidate_id": f"tpe{i}", "params": b} for i, b in enumerate(batch)]
        return [r["score_mean"] for r in score_rows(store, p, req.search_env, cands, p.search_seeds, "tpe round")]

    return tpe_candidates(req.budget, req.space_seed, score)


def run(req: TrainRequest) -> Path:
    """`policylab breakout train`: run (or resume) the loop; returns the report.html path."""
    p = plan(req)
    claim_out_dir(req.out, p.config)
    started = time.time()
    with Store(p.store_root) as store:
        candidates = candidates_for(store, p)
        search = score_rows(store, p, req.search_env, candidates, p.search_seeds, f"search on {req.search_env}")
        ranked = rank_candidates(search, req.select)
        screening: list[dict] = []
        if req.screen_top:
            screening = score_rows(store, p, "ale", ranked[: req.screen_top], p.screen_seeds, "screening on ALE")
            pick = rank_candidates(screening, req.select)[0]
        else:
            pick = ranked[0]
        validation = _validate(store, p, pick)
        video = _evidence_video(store, p, pick) if req.video else None

    data = build_report(p, search, ranked, screening, pick, validation, video)
    write_json(req.out / "policy_params.json", {"policy": SEARCH_POLICY, "candidate_id": pick["candidate_id"],
                                                "params": pick["params"]})
    write_json(req.out / "manifest.json", {"policy": SEARCH_POLICY, "params_file": "policy_params.json",
                                           "config": p.config, "rerun_commands": data["rerun_commands"]})
    report = write_train_report(req.out, data)
    write_json(req.out / "wallclock.json", {"wall_seconds": time.time() - started,
                                            "note": "wall-clock time only; every other file is deterministic"})
    say(f"verdict: {data['decision']['verdict']}")
    return report


def _validate(store: Store, p: Plan, pick: dict) -> dict:
    tasks = [_task(p, "ale", pick["params"], p.validate_seeds),
             _task(p, "ale", p.baseline.params, p.validate_seeds, policy=p.baseline.name, network=p.baseline.network)]
    records = ensure_episodes(store, tasks, executor=p.req.executor, ray_address=p.req.ray_address,
                              label="validation on ALE")
    pick_scores = [records[(0, s)].outcome["score"] for s in p.validate_seeds]
    base_scores = [records[(1, s)].outcome["score"] for s in p.validate_seeds]
    return {"pick": pick_scores, "baseline": base_scores}


def _evidence_video(store: Store, p: Plan, pick: dict) -> dict:
    task = _task(p, "ale", pick["params"], p.validate_seeds[:1])
    return episode_video(store, task, p.req.out, name="pick_ale_validation_ep000.mp4")


# -- decision and report data ------------------------------------------------------------------------
def build_report(p: Plan, search: list[dict], ranked: list[dict], screening: list[dict], pick: dict,
                 validation: dict, video: dict | None) -> dict:
    req = p.req
    cmp = compare_paired(p.validate_seeds, validation["pick"], validation["baseline"])
    new, base, delta, label, not_lower, paired = (cmp[k] for k in ("new", "base", "delta", "verdict", "not_lower",
                                                                   "paired"))
    fidelity = _screen_fidelity(search, screening)
    regret = None
    if screening:
        best = max(screening, key=lambda r: r["score_mean"])
        regret = {"pick_ale_mean": pick["score_mean"], "best_screened_ale_mean": best["score_mean"],
                  "best_screened_candidate": best["candidate_id"],
                  "regret": best["score_mean"] - pick["score_mean"],
                  "seeds": "screening seeds (the pick's and the best's ALE means on the same seeds)"}
    return {
        "objective": {
            "goal": "find a v3-family policy that scores higher than the baseline on real ALE Breakout",
            "search_env": req.search_env, "preset": req.preset if req.search_env == "shadow" else None,
            "space": req.space, "budget": len(search), "selection_rule": req.select,
            "multi_fidelity": bool(req.screen_top), "protocol": p.protocol, "baseline": p.config["baseline"],
            "seeds": p.config["seeds"],
            **({"baseline_network": p.config["baseline_network"]} if "baseline_network" in p.config else {}),
        },
        "training": {
            "training_source": f"{req.search_env} parameter search ({req.space})",
            "searched_candidates": len(search),
            "selected_candidate": {k: pick[k] for k in ("candidate_id", "params", "scores", "score_mean",
                                                         "score_min", "score_max", "low_score_count")},
            "selected_on": "ALE screening" if screening else req.search_env,
            "top_search_candidates": ranked[:10],
            "all_candidates": [{k: r[k] for k in ("candidate_id", "score_mean", "score_min", "low_score_count")}
                               for r in search],
            "screening": screening,
            "shadow_vs_ale_rank_correlation": fidelity,
        },
        "evaluation": {
            "new_policy": new, "baseline_policy": base,
            "atari_mean_delta_vs_baseline": new["mean"] - base["mean"],
            "paired_delta": delta, "paired_by_seed": paired, "regret": regret,
        },
        "decision": {
            "verdict": label,
            "verdict_rule": "improved if the bootstrap 95% interval of the paired mean delta (pick - baseline) "
                            "is above 0, worse if below 0, inconclusive otherwise",
            "new_policy_not_lower_than_previous_best": not_lower,
            "failure_reason": None if label == "improved" else _failure_reason(label, delta),
            "next_recommendation": _next_step(label, fidelity, p.shadow is not None and p.shadow.model == "rom"),
        },
        "rerun_commands": {
            "train": command_line("policylab breakout train", req),
            "validate_pick": (f"policylab breakout eval --env ale --policy {SEARCH_POLICY} --params "
                              f"{shlex.quote(str(req.out / 'policy_params.json'))} --episodes "
                              f"{req.validate_episodes} --seed {req.validate_seed} --max-steps {req.max_steps}"
                              + (f" --sticky {req.sticky}" if req.sticky is not None else "")
                              + f" --serve {req.serve} --out {shlex.quote(str(req.out) + '-validate')} --video"),
        },
        "evidence": {"video": video, "store": str(p.store_root)},
    }


def _screen_fidelity(search: list[dict], screening: list[dict]) -> dict | None:
    if len(screening) < 2:
        return None
    by_id = {r["candidate_id"]: r["score_mean"] for r in search}
    sim = [by_id[r["candidate_id"]] for r in screening]
    ale = [r["score_mean"] for r in screening]
    return {"pearson": pearson(sim, ale), "spearman": spearman(sim, ale),
            "spearman_ci95": spearman_ci(sim, ale), "sample_size": len(screening),
            "over": "the screened candidates: search-env mean vs ALE screening mean"}


def _failure_reason(label: str, delta: dict) -> str:
    lo, hi = delta["ci95"]
    if label == "worse":
        return f"the pick scores lower than the baseline on ALE: paired 95% interval [{lo:.2f}, {hi:.2f}] is below 0"
    return f"the paired 95% interval [{lo:.2f}, {hi:.2f}] contains 0: no evidence either way at this sample size"


def _next_step(label: str, fidelity: dict | None, exact: bool) -> str:
    """What to do next. On an exact search env (`ale-exact`) the search scores are ALE's own, so a low
    search-vs-screening rank correlation is seed noise, not a simulator to calibrate."""
    if label == "improved":
        return "adopt the pick; re-validate on a fresh seed range before relying on the margin"
    if exact:
        return "the search env is ALE's game: search on more seeds (--search-seeds) or validate on more episodes"
    if fidelity is not None and not (fidelity["spearman"] >= 0.5):
        return "the search env ranks candidates unlike ALE: calibrate it (policylab breakout calibrate) or screen more on ALE"
    return "increase validation episodes or screen more candidates on ALE"
