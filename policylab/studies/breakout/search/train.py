"""`policylab breakout train`: search in the shadow simulator, validate at scale, give an honest verdict.

Stages search, select, validate, decide, report, each resumable (docs/breakout.md, "The training loop")."""

from __future__ import annotations

import functools
import shlex
import time
from dataclasses import dataclass
from pathlib import Path

from policylab.config import claim_out_dir
from policylab.envs.breakout.ale import Protocol
from policylab.envs.breakout.params import ShadowParams, load_preset
from policylab.errors import BadInput
from policylab.fileio import write_json, write_wallclock
from policylab.policies.breakout_net import NetworkFile
from policylab.progress import say
from policylab.result import command_line
from policylab.rollout.seeds import named_range, world_seed
from policylab.rollout.store import Store
from policylab.stats import MIN_PAIRS, VERDICT_TOO_FEW, pearson, spearman, spearman_ci
from policylab.studies.breakout import options
from policylab.studies.breakout.episodes.runner import EpisodeTask, ensure_episodes, run_shadow_group
from policylab.studies.breakout.episodes.video import episode_video
from policylab.studies.breakout.requests import OBJECTIVES, STUDY_MAX_STEPS, TrainRequest
from policylab.studies.breakout.search.halving import candidate_row, halve, regret_estimate
from policylab.studies.breakout.search.report import write_train_report
from policylab.studies.breakout.search.search_space import grid216, random_candidates, tpe_candidates
from policylab.studies.breakout.search.selection import VERDICT_RULE, compare_paired, rank_candidates

SEARCH_POLICY = "breakout_policy_v3"  # the family every candidate belongs to


RUN_ONLY = ("out", "store", "executor", "ray_address")  # where and how a run goes, never what it finds


@dataclass(frozen=True)
class Plan:
    req: TrainRequest
    protocol: dict
    shadow: ShadowParams | None  # the search env's physics, resolved once (shadow search only)
    baseline: options.PolicyChoice
    rule: str  # the objective's selection rule
    schedule: tuple[tuple[int, int], ...]  # (candidates, seeds each) per halving round
    search_seeds: tuple[int, ...]  # the last round's (every round's are its first ones)
    screen_seeds: tuple[int, ...]
    validate_seeds: tuple[int, ...]  # the verdict's: exact shadow seeds, or ALE seeds
    ale_seeds: tuple[int, ...]  # played on ALE: the validation itself, or the exact validation's confirmation sample
    exact: bool  # validated on the exact shadow, confirmed on ALE
    store_root: Path
    config: dict


def _seeds(base: int, n: int) -> tuple[int, ...]:
    return tuple(world_seed("breakout", 0, i, base=base) for i in range(n))


def search_seeds(n: int) -> tuple[int, ...]:
    """The first `n` seeds of breakout.search: round r of the halving plays the first n_r."""
    return named_range("breakout", "search").first(n)


def plan(req: TrainRequest) -> Plan:
    """Check everything the request model could not (nothing is written here)."""
    protocol = options.protocol_from(req)
    shadow = options.resolve_preset(req.preset, req.sticky) if req.search_env == "shadow" else None
    baseline = options.resolve_policy(req.baseline, None, "baseline")
    schedule = tuple(req.schedule(req.pool_size()))
    search = search_seeds(schedule[-1][1])
    screen = _seeds(req.screen_seed, req.screen_episodes) if req.screen_top else ()
    exact = shadow is not None and shadow.model == "rom" and req.exact_episodes > 0
    if exact:
        if req.validate_episodes > req.exact_episodes:
            raise BadInput(
                "validate_episodes",
                f"the ALE confirmation sample ({req.validate_episodes}) is larger than "
                f"the exact validation ({req.exact_episodes} seeds)",
            )
        validate = _seeds(req.exact_seed, req.exact_episodes)
        ale = validate[: req.validate_episodes]
    else:
        validate = ale = _seeds(req.validate_seed, req.validate_episodes)
    options.check_pixels(baseline.network, "shadow" if exact else "ale", shadow, protocol, "baseline")
    field = "exact_seed" if exact else "validate_seed"
    if set(validate) & set(search):
        raise BadInput(field, "validation seeds overlap the search seeds; selection and validation never share seeds")
    if set(validate) & set(screen):
        raise BadInput(field, "validation seeds overlap the screening seeds")
    if req.search_env == "ale" and set(screen) & set(search):
        raise BadInput("screen_seed", "screening seeds overlap the ALE search seeds")
    store_root = options.check_run(req)
    config = req.model_dump(mode="json", exclude=set(RUN_ONLY))
    config.update(
        {
            "command": "breakout train",
            "protocol": protocol,
            "selection_rule": OBJECTIVES[req.objective],
            "seeds": {"search": list(search), "screen": list(screen), "validate": list(validate), "ale": list(ale)},
        }
    )
    if baseline.network is not None:  # a network baseline is its file name and content, not its path
        config.update({"baseline": baseline.name, "baseline_network": baseline.network.record})
    return Plan(
        req,
        protocol,
        shadow,
        baseline,
        OBJECTIVES[req.objective],
        schedule,
        search,
        screen,
        validate,
        ale,
        exact,
        store_root,
        config,
    )


# -- stages -----------------------------------------------------------------------------------------
def _task(
    p: Plan,
    env: str,
    params: dict,
    seeds: tuple[int, ...],
    policy: str = SEARCH_POLICY,
    network: NetworkFile | None = None,
) -> EpisodeTask:
    if env == "ale":
        return EpisodeTask(env=env, seeds=seeds, policy=policy, params=params, protocol=p.protocol, network=network)
    return EpisodeTask(
        env=env,
        seeds=seeds,
        policy=policy,
        params=params,
        protocol=p.protocol,
        shadow=p.shadow,
        preset=p.req.preset,
        network=network,
    )


def score_rows(
    store: Store, p: Plan, env: str, candidates: list[dict], seeds: tuple[int, ...], label: str
) -> list[dict]:
    """Play every candidate on `env` x `seeds` (skipping stored keys) and summarise each one."""
    return [candidate_row(c, s) for c, s in zip(candidates, store_scores(store, p, env, label)(candidates, seeds))]


def store_scores(store: Store, p: Plan, env: str, label: str):
    """A halving scorer that plays through the store (a killed run resumes; a round replays nothing)."""

    def score(candidates: list[dict], seeds: tuple[int, ...]) -> list[list[float]]:
        tasks = [_task(p, env, c["params"], seeds) for c in candidates]
        records = ensure_episodes(
            store,
            tasks,
            executor=p.req.executor,
            ray_address=p.req.ray_address,
            label=f"{label}, {len(candidates)} x {len(seeds)} seeds",
        )
        return [[records[(ti, s)].outcome["score"] for s in seeds] for ti in range(len(candidates))]

    return score


PLAY_CHUNK = 4096  # shadow envs per in-process batch: each keeps its trajectory until the batch ends


def shadow_scorer(protocol: dict, shadow: ShadowParams, preset: str, policy: str = SEARCH_POLICY):
    """A halving scorer that plays in-process, without a store, in batches of at most PLAY_CHUNK envs
    (`default_pick` and the regret benchmark)."""

    def score(candidates: list[dict], seeds: tuple[int, ...]) -> list[list[float]]:
        per = max(1, PLAY_CHUNK // len(seeds))
        out: list[list[float]] = []
        for i in range(0, len(candidates), per):
            tasks = [
                EpisodeTask("shadow", tuple(seeds), policy, c["params"], protocol, shadow=shadow, preset=preset)
                for c in candidates[i : i + per]
            ]
            out += [[float(e.outcome["score"]) for e in eps] for eps in run_shadow_group(tasks)]
        return out

    return score


def default_pick() -> dict:
    """What `policylab breakout train` picks on its defaults (its search space, halving schedule, search
    seeds, preset, protocol and objective, all read from `TrainRequest`'s defaults), recomputed
    in-process without a store, once per process (seconds of play that every later call would repeat
    to the same answer): {"candidate_id", "params", "source"}. The lockstep harness and the transfer
    validation play it as "the search pick"."""
    pick = _default_pick()
    return {**pick, "params": dict(pick["params"])}  # a caller's edits stay out of the cached one


@functools.cache
def _default_pick() -> dict:
    d = TrainRequest.model_construct()  # every field's default (out has none, and is not needed)
    assert d.space == "grid216" and d.search_env == "shadow" and d.screen_top is None
    protocol = Protocol(max_steps=STUDY_MAX_STEPS, serve=d.serve).model_dump()  # the default (no --protocol)
    rounds = halve(
        grid216(),
        shadow_scorer(protocol, load_preset(d.preset), d.preset),
        d.schedule(len(grid216())),
        search_seeds,
        OBJECTIVES[d.objective],
    )
    best = rounds[-1]["ranked"][0]
    source = (
        f"policylab breakout train on its defaults ({d.space}, successive halving "
        f"{' -> '.join(f'{c} x {n}' for c, n in d.schedule(len(grid216())))} seeds on the shadow preset "
        f"{d.preset}, objective {d.objective}), recomputed"
    )
    return {"candidate_id": best["candidate_id"], "params": dict(best["params"]), "source": source}


def candidates_for(store: Store, p: Plan) -> list[dict]:
    req = p.req
    if req.space == "grid216":
        return grid216()
    if req.space == "random":
        return random_candidates(req.budget, req.space_seed)

    def score(batch: list[dict]) -> list[float]:
        cands = [{"candidate_id": f"tpe{i}", "params": b} for i, b in enumerate(batch)]
        return [
            r["score_mean"]
            for r in score_rows(store, p, req.search_env, cands, search_seeds(p.schedule[0][1]), "tpe round")
        ]

    return tpe_candidates(req.budget, req.space_seed, score)


def run(req: TrainRequest) -> Path:
    """`policylab breakout train`: run (or resume) the loop; returns the report.html path."""
    p = plan(req)
    claim_out_dir(req.out, p.config)
    started = time.time()
    with Store(p.store_root) as store:
        candidates = candidates_for(store, p)
        rounds = halve(
            candidates,
            store_scores(store, p, req.search_env, f"search on {req.search_env}"),
            p.schedule,
            search_seeds,
            p.rule,
        )
        ranked = rounds[-1]["ranked"]
        screening: list[dict] = []
        if req.screen_top:
            screening = score_rows(store, p, "ale", ranked[: req.screen_top], p.screen_seeds, "screening on ALE")
            pick = rank_candidates(screening, p.rule)[0]
        else:
            pick = ranked[0]
        validation = _validate(store, p, pick)
        video = _evidence_video(store, p, pick) if req.video else None

    data = build_report(p, rounds, screening, pick, validation, video)
    write_json(
        req.out / "policy_params.json",
        {"policy": SEARCH_POLICY, "candidate_id": pick["candidate_id"], "params": pick["params"]},
    )
    write_json(
        req.out / "manifest.json",
        {
            "policy": SEARCH_POLICY,
            "params_file": "policy_params.json",
            "config": p.config,
            "rerun_commands": data["rerun_commands"],
        },
    )
    report = write_train_report(req.out, data)
    write_wallclock(req.out, time.time() - started)
    for line in data["decision"]["headlines"]:
        say(line)
    return report


def _validate(store: Store, p: Plan, pick: dict) -> dict:
    """The pick's and the baseline's scores on the validation seeds (the exact shadow's or ALE's), and
    on ALE's seeds when those are a confirmation sample of the exact ones."""
    envs = [("shadow", p.validate_seeds), ("ale", p.ale_seeds)] if p.exact else [("ale", p.validate_seeds)]
    tasks = [
        t
        for env, seeds in envs
        for t in (
            _task(p, env, pick["params"], seeds),
            _task(p, env, p.baseline.params, seeds, policy=p.baseline.name, network=p.baseline.network),
        )
    ]
    records = ensure_episodes(
        store,
        tasks,
        executor=p.req.executor,
        ray_address=p.req.ray_address,
        label="validation on the exact shadow and ALE" if p.exact else "validation on ALE",
    )
    scores = [[records[(i, s)].outcome["score"] for s in t.seeds] for i, t in enumerate(tasks)]
    out = {"pick": scores[0], "baseline": scores[1]}
    if p.exact:
        out.update({"ale_pick": scores[2], "ale_baseline": scores[3]})
    return out


def _evidence_video(store: Store, p: Plan, pick: dict) -> dict:
    task = _task(p, "ale", pick["params"], p.ale_seeds[:1])
    return episode_video(store, task, p.req.out, name="pick_ale_validation_ep000.mp4")


# -- decision and report data ------------------------------------------------------------------------
def build_report(
    p: Plan, rounds: list[dict], screening: list[dict], pick: dict, validation: dict, video: dict | None
) -> dict:
    req = p.req
    search, ranked = rounds[0]["ranked"], rounds[-1]["ranked"]
    cmp = compare_paired(p.validate_seeds, validation["pick"], validation["baseline"])
    new, base, delta, label, not_lower, paired = (
        cmp[k] for k in ("new", "base", "delta", "verdict", "not_lower", "paired")
    )
    confirmation = _confirmation(p, validation) if p.exact else None
    verdict_source = "exact shadow" if p.exact else "ALE"
    if confirmation is not None and confirmation["equal"] < confirmation["of"]:
        label, delta, verdict_source = (
            confirmation["ale"]["verdict"],
            confirmation["ale"]["paired_delta"],
            "ALE confirmation sample (the shadow did not replay ALE on every confirmation seed)",
        )
    fidelity = _screen_fidelity(ranked, screening)
    regret = None
    if screening:
        best = max(screening, key=lambda r: r["score_mean"])
        regret = {
            "pick_ale_mean": pick["score_mean"],
            "best_screened_ale_mean": best["score_mean"],
            "best_screened_candidate": best["candidate_id"],
            "regret": best["score_mean"] - pick["score_mean"],
            "seeds": "screening seeds (the pick's and the best's ALE means on the same seeds)",
        }
    searched = next(r for r in ranked if r["candidate_id"] == pick["candidate_id"])
    curse = {
        "search_mean": searched["score_mean"],
        "search_seeds": len(searched["scores"]),
        "screening_mean": pick["score_mean"] if screening else None,
        "validation_mean": new["mean"],
        "validation_seeds": len(p.validate_seeds),
        "validation_env": "exact shadow" if p.exact else "ALE",
        "note": "the pick was chosen for its search scores, which regress on fresh seeds: the validation "
        "mean is what it scores",
    }
    validation_env = f"shadow ({req.preset}, exact), confirmed on ALE" if p.exact else "ale"
    data = {
        "objective": {
            "goal": "find a v3-family policy that scores higher than the baseline on real ALE Breakout",
            "search_env": req.search_env,
            "preset": req.preset if req.search_env == "shadow" else None,
            "space": req.space,
            "budget": len(search),
            "search_objective": req.objective,
            "selection_rule": p.rule,
            "schedule": [{"candidates": c, "seeds_each": n} for c, n in p.schedule],
            "multi_fidelity": bool(req.screen_top),
            "protocol": p.protocol,
            "baseline": p.config["baseline"],
            "validation_env": validation_env,
            "seeds": p.config["seeds"],
            **({"baseline_network": p.config["baseline_network"]} if "baseline_network" in p.config else {}),
        },
        "training": {
            "training_source": f"{req.search_env} parameter search ({req.space}, successive halving)",
            "searched_candidates": len(search),
            "selected_candidate": {
                k: pick[k]
                for k in ("candidate_id", "params", "scores", "score_mean", "score_min", "score_max", "low_score_count")
            },
            "selected_on": "ALE screening" if screening else req.search_env,
            "rounds": [
                {
                    "round": r["round"],
                    "candidates": r["candidates"],
                    "seeds_each": r["seeds_each"],
                    "best": r["ranked"][0]["candidate_id"],
                }
                for r in rounds
            ],
            "contenders": [
                {
                    k: r[k]
                    for k in (
                        "candidate_id",
                        "score_mean",
                        "score_mean_ci95",
                        "score_q25",
                        "score_min",
                        "low_score_count",
                    )
                }
                | {"seeds": len(r["scores"])}
                for r in ranked
            ],
            "regret_estimate": regret_estimate(ranked, searched["candidate_id"]),
            "top_search_candidates": ranked[:10],
            "all_candidates": [
                {k: r[k] for k in ("candidate_id", "score_mean", "score_min", "low_score_count")} for r in search
            ],
            "screening": screening,
            "shadow_vs_ale_rank_correlation": fidelity,
        },
        "evaluation": {
            "validation_env": validation_env,
            "new_policy": new,
            "baseline_policy": base,
            "atari_mean_delta_vs_baseline": new["mean"] - base["mean"],
            "paired_delta": delta,
            "paired_by_seed": paired,
            "regret": regret,
            "ale_confirmation": confirmation,
            "winners_curse": curse,
        },
        "decision": {
            "verdict": label,
            "verdict_source": verdict_source,
            "verdict_rule": VERDICT_RULE.format(pair="pick - baseline"),
            "verdict_agreement": delta["verdict_agreement"],
            "new_policy_not_lower_than_previous_best": not_lower,
            "failure_reason": None if label == "improved" else _failure_reason(label, delta),
            "next_recommendation": _next_step(label, fidelity, p.shadow is not None and p.shadow.model == "rom"),
        },
        "rerun_commands": {
            "train": command_line("policylab breakout train", req),
            "validate_pick": (
                f"policylab breakout eval --env ale --policy {SEARCH_POLICY} --params "
                f"{shlex.quote(str(req.out / 'policy_params.json'))} --episodes "
                f"{len(p.ale_seeds)} --seed {p.ale_seeds[0]} --max-steps {req.max_steps}"
                + (f" --sticky {req.sticky}" if req.sticky is not None else "")
                + f" --serve {req.serve} --out {shlex.quote(str(req.out) + '-validate')} --video"
            ),
        },
        "evidence": {"video": video, "store": str(p.store_root)},
    }
    data["decision"]["headlines"] = headlines(data)
    return data


def _confirmation(p: Plan, validation: dict) -> dict:
    """The exact validation's first seeds on ALE: each ALE score against the shadow's on the same seed,
    and the ALE-only paired verdict on them."""
    n = len(p.ale_seeds)
    rows = [
        {"seed": s, "pick_shadow": a, "pick_ale": b, "baseline_shadow": c, "baseline_ale": d}
        for s, a, b, c, d in zip(
            p.ale_seeds,
            validation["pick"][:n],
            validation["ale_pick"],
            validation["baseline"][:n],
            validation["ale_baseline"],
        )
    ]
    equal = sum(r["pick_shadow"] == r["pick_ale"] and r["baseline_shadow"] == r["baseline_ale"] for r in rows)
    ale = compare_paired(p.ale_seeds, validation["ale_pick"], validation["ale_baseline"])
    return {
        "of": n,
        "equal": equal,
        "rows": rows,
        "rule": "a seed is confirmed when both the pick's and the baseline's ALE scores equal their shadow scores",
        "ale": {
            "paired_delta": ale["delta"],
            "verdict": ale["verdict"],
            "pick_mean": ale["new"]["mean"],
            "baseline_mean": ale["base"]["mean"],
        },
    }


def _interval(d: dict) -> str:
    if d["ci95"] is None:
        return f"{d['mean_delta']:+.1f} (no interval from one pair)"
    lo, hi = d["ci95"]
    return f"{d['mean_delta']:+.1f} [{lo:.1f}, {hi:.1f}]"


def headlines(data: dict) -> list[str]:
    """What the command prints: the verdict with its interval and how sure it is, the ALE confirmation,
    the winner's curse."""
    ev, dec = data["evaluation"], data["decision"]
    d, curse = ev["paired_delta"], ev["winners_curse"]
    pick = data["training"]["selected_candidate"]["candidate_id"]
    out = [
        f"verdict: {dec['verdict']}: {pick} vs {data['objective']['baseline']}, paired delta {_interval(d)} "
        f"(95% CI) on {d['n']:,} {dec['verdict_source']} seeds; a fresh set of {d['n']:,} seeds reaches the same "
        f"verdict with probability {d['verdict_agreement']:.2f}"
    ]
    conf = ev["ale_confirmation"]
    if conf is not None:
        a = conf["ale"]
        out.append(
            f"ALE confirmation: {conf['equal']} of {conf['of']} seeds score the same on ALE as in the shadow; "
            f"on those seeds alone: {_interval(a['paired_delta'])}, {a['verdict']}"
        )
    screen = "" if curse["screening_mean"] is None else f", screening mean {curse['screening_mean']:.1f}"
    out.append(
        f"winner's curse: search mean {curse['search_mean']:.1f} ({curse['search_seeds']} seeds){screen}, "
        f"validation mean {curse['validation_mean']:.1f} ({curse['validation_seeds']:,} seeds)"
    )
    return out


def _screen_fidelity(search: list[dict], screening: list[dict]) -> dict | None:
    if len(screening) < 2:
        return None
    by_id = {r["candidate_id"]: r["score_mean"] for r in search}
    sim = [by_id[r["candidate_id"]] for r in screening]
    ale = [r["score_mean"] for r in screening]
    return {
        "pearson": pearson(sim, ale),
        "spearman": spearman(sim, ale),
        "spearman_ci95": spearman_ci(sim, ale),
        "sample_size": len(screening),
        "over": "the screened candidates: search-env mean vs ALE screening mean",
    }


def _failure_reason(label: str, delta: dict) -> str:
    if label == VERDICT_TOO_FEW:
        return f"{delta['n']} validation pairs are too few for a verdict (at least {MIN_PAIRS})"
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
        return "the search env is ALE's game: search on more seeds (--search-seeds, --rounds) or validate on more seeds"
    if fidelity is not None and not (fidelity["spearman"] >= 0.5):
        return "the search env ranks candidates unlike ALE: calibrate it (policylab breakout calibrate) or screen more on ALE"
    return "increase validation episodes or screen more candidates on ALE"
