"""Every experiment of the post, as the original script ran them, into summary.json.

Only `sim_rng = default_rng(7)` is shared: untrained, ceiling, then the first seed's REINFORCE, PPO, GRPO sims."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from policylab.errors import BadInput
from policylab.progress import say
from policylab.rollout.ensure import ensure
from policylab.rollout.store import Store
from policylab.studies.lava_leap import claims, config, runs, uncertainty
from policylab.studies.lava_leap.agent import leap_table, play, sensors
from policylab.studies.lava_leap.charts import NAME
from policylab.studies.lava_leap.checks import evaluate_checks
from policylab.studies.lava_leap.exact import (
    all_deterministic_policies,
    deterministic_tables,
    evaluate,
    exact_outcomes,
    outcomes_many,
)
from policylab.studies.lava_leap.floor import FLOOR, channels, floor_info, new_floor, new_floors
from policylab.studies.lava_leap.learners import ADV_EPS, ALGOS, group_advantage
from policylab.studies.lava_leap.records import fall_kind, keyed_table, reached_exit, rnd, rnd_list, rounded, run_info
from policylab.studies.lava_leap.simulate import simulate
from policylab.studies.lava_leap.walkthrough import replay_group, walkthrough

NEVER = (0b101, 0b111)  # patterns impossible on a real floor (gap >= 2, width <= 2)
OCCURRING = (0, 1, 2, 3, 4, 6)
LEAP_IFF_LAVA_NEXT = sum(1 << b for b in range(8) if b >> 2 & 1)  # policy id: leap on 1xx


@dataclass
class Trained:
    """Every training run of E2: final weights, curves, snapshots and clip logs by (algo, seed)."""

    curves: dict = field(default_factory=dict)  # algo -> [[score at each eval point] per seed]
    exits: dict = field(default_factory=dict)  # algo -> [[exit prob at each eval point] per seed]
    weights: dict = field(default_factory=dict)  # (algo, seed) -> (W, v)
    snaps: dict = field(default_factory=dict)  # (algo, seed) -> {update: (W, v)}
    clip_logs: dict = field(default_factory=dict)  # (algo, seed) -> [per-update dicts]
    by_lr: dict = field(default_factory=dict)  # (algo, lr) -> [final score per training seed], LR sweep + default


@dataclass
class Study:
    summary: dict
    walkthrough: dict
    checks: list  # the constraints (docs/lava_leap.md), evaluated on this run (checks.evaluate_checks)
    charts: dict  # chart name -> keyword arguments for charts.draw_*


def sim_dict(table, floors, rng) -> dict:
    score, exit_rate = simulate(table, floors, config.SIM_PLAYS, rng)
    return dict(score=rnd(score), exit_rate=rnd(exit_rate))


def baseline_and_ceiling(test, sim_rng):
    """Untrained W = 0 and the best of all 256 deterministic policies, exact and Monte Carlo."""
    W0 = np.zeros((4, 2))
    untrained_score, untrained_exit = evaluate(W0, test)
    scores, exits = all_deterministic_policies(test)
    best = np.flatnonzero(np.isclose(scores, scores.max(), atol=1e-12))
    ceiling, ceiling_exit = float(scores.max()), float(exits[best[0]])
    best_table = deterministic_tables()[best[0]]
    untrained = dict(
        score=rnd(untrained_score), exit_rate=rnd(untrained_exit), sim=sim_dict(leap_table(W0), test, sim_rng)
    )
    ceil = dict(
        score=rnd(ceiling),
        exit_rate=rnd(ceiling_exit),
        n_policies=len(scores),
        n_tied_best=int(len(best)),
        best_policy_ids=[int(b) for b in best],
        best_policies_leap_on=[[format(b, "03b") for b in range(8) if (pid >> b) & 1] for pid in best],
        leap_iff_lava_next_is_best=bool(LEAP_IFF_LAVA_NEXT in best),
        second_best_score=rnd(np.max(scores[scores < ceiling - 1e-9])),
        sim=sim_dict(best_table, test, sim_rng),
    )
    return untrained, ceil, best_table


def train_all(cfg: config.LavaLeapConfig, store: Store) -> Trained:
    """E2 (every algorithm x training seed) and the LR sweep: training runs as store records (one
    ensure call). `by_lr` holds every (algo, lr)'s final scores, the run's own lr included."""
    seeds = cfg.seeds
    main = [(algo, seed, runs.planned(cfg, algo, seed)) for algo in ALGOS for seed in seeds]
    sweep_runs = [(algo, lr) for algo, lrs in config.LR_SWEEP.items() for lr in lrs]
    swept = [(algo, lr, seed, runs.planned(cfg, algo, seed, lr=lr)) for algo, lr in sweep_runs for seed in seeds]
    records = ensure(
        store, [p for *_, p in main] + [p for *_, p in swept], runs.Runner(), label="lava-leap: training", unit="runs"
    )
    out = Trained()
    for algo, seed, p in main:
        W, v, curve, saved, log = runs.unpack(store.payload(records[p.key].key))
        _require_finite(algo, seed, W, v, curve)
        out.curves.setdefault(algo, []).append([c[1] for c in curve])
        out.exits.setdefault(algo, []).append([c[2] for c in curve])
        out.weights[algo, seed] = (W, v)
        out.snaps[algo, seed] = saved
        if algo != "reinforce":
            out.clip_logs[algo, seed] = log
    for algo in ALGOS:
        out.by_lr[algo, float(cfg.lr)] = [rnd(c[-1]) for c in out.curves[algo]]
    for algo, lr in sweep_runs:
        out.by_lr[algo, float(lr)] = [
            rnd(_final(records[p.key], a, r, s)) for a, r, s, p in swept if (a, r) == (algo, lr)
        ]
    return out


def _final(record, algo: str, lr: float, seed: int) -> float:
    """A sweep or validation run's final score; a run that diverged is refused by name, as in E2."""
    score = record.outcome["final_score"]
    if not record.outcome.get("finite", True) or not np.isfinite(score):
        raise BadInput(
            "lr",
            f"{algo} at lr {lr} (seed {seed}) diverged: its weights became non-finite; the "
            "learning-rate sweep trains at its own fixed rates, so these hyperparameters cannot "
            "be swept",
        )
    return score


def validate_lrs(cfg: config.LavaLeapConfig, store: Store, chosen: dict[str, float]) -> dict:
    """The chosen learning rates (and the defaults where they differ) trained again on the validation
    seeds, as store records (a second ensure call: what runs depends on the choice). Returns
    {(algo, lr): [final score per validation seed]}."""
    plan = [
        (algo, lr, seed, runs.planned(cfg, algo, seed, lr=lr))
        for algo, lr in uncertainty.validation_plan(cfg, chosen)
        for seed in cfg.validation_seeds
    ]
    records = ensure(store, [p for *_, p in plan], runs.Runner(), label="lava-leap: validation", unit="runs")
    out: dict = {}
    for algo, lr, seed, p in plan:
        out.setdefault((algo, lr), []).append(rnd(_final(records[p.key], algo, lr, seed)))
    return out


def _require_finite(algo: str, seed: int, W, v, curve) -> None:
    """A learning rate that blows the weights up is bad input, not a result: refuse it by name."""
    if not np.isfinite(W).all() or not np.isfinite([c[1] for c in curve]).all():
        raise BadInput(
            "lr", f"{algo} (training seed {seed}) diverged: the policy weights became non-finite; use a smaller --lr"
        )
    if v is not None and not np.isfinite(v).all():
        raise BadInput(
            "lr_critic",
            f"{algo} (training seed {seed}) diverged: the critic's weights became "
            "non-finite; use a smaller --lr-critic",
        )


def finals_section(cfg, tr: Trained, updates, ceiling, test, sim_rng) -> dict:
    final = {}
    for algo in ALGOS:
        per_seed = [
            dict(seed=seed, score=rnd(c[-1]), exit_rate=rnd(e[-1]))
            for seed, c, e in zip(cfg.seeds, tr.curves[algo], tr.exits[algo])
        ]
        s = np.array([p["score"] for p in per_seed])
        e = np.array([p["exit_rate"] for p in per_seed])
        W_first = tr.weights[algo, cfg.seeds[0]][0]
        final[algo] = dict(
            score_mean=rnd(s.mean()),
            score_min=rnd(s.min()),
            score_max=rnd(s.max()),
            exit_mean=rnd(e.mean()),
            exit_min=rnd(e.min()),
            exit_max=rnd(e.max()),
            pct_of_ceiling=rnd(100 * s.mean() / ceiling),
            per_seed=per_seed,
            seed0_sim=sim_dict(leap_table(W_first), test, sim_rng),
        )
    for algo in ALGOS:
        m = np.mean(tr.curves[algo], axis=0)
        hit = np.flatnonzero(m >= 0.9 * ceiling)
        final[algo]["updates_to_90pct"] = int(updates[hit[0]]) if len(hit) else None
        final[algo]["score_at_50"] = rnd(m[updates.index(50)])
        final[algo]["score_at_100"] = rnd(m[updates.index(100)])
        # the unit is the training seed: t intervals over the per-seed exact scores, clipped to their range
        s_iv = uncertainty.interval([p["score"] for p in final[algo]["per_seed"]], (0.0, ceiling))
        e_iv = uncertainty.interval([p["exit_rate"] for p in final[algo]["per_seed"]], (0.0, 1.0))
        final[algo].update(
            n_seeds=s_iv["n"],
            score_sd=s_iv["sd"],
            score_ci95=s_iv["ci95"],
            pct_of_ceiling_ci95=None if s_iv["ci95"] is None else rnd_list(100 * x / ceiling for x in s_iv["ci95"]),
            exit_sd=e_iv["sd"],
            exit_ci95=e_iv["ci95"],
        )
    return final


def slow_seed_section(cfg, tr: Trained, updates) -> dict:
    """The GRPO seed with the lowest score at update 100: its plateau and when it broke out."""
    curves = tr.curves["grpo"]
    slow = int(np.argmin([c[updates.index(config.SLOW_AT)] for c in curves]))
    sc = np.array(curves[slow])
    plateau = sc[updates.index(config.PLATEAU[0]) : updates.index(config.PLATEAU[1]) + 1]
    release = next((u for u, x in zip(updates, sc) if u > config.PLATEAU[0] and x >= plateau.mean() + 0.05), None)
    lt10 = leap_table(tr.snaps["grpo", cfg.seeds[slow]][10][0])
    return dict(
        seed=cfg.seeds[slow],
        plateau_mean=rnd(plateau.mean()),
        plateau_min=rnd(plateau.min()),
        plateau_max=rnd(plateau.max()),
        release_update=None if release is None else int(release),
        leap_table_at_10=rnd_list(lt10),
        min_leap_at_10=rnd(lt10[list(OCCURRING)].min()),
        score_at_100_per_seed=[rnd(c[updates.index(config.SLOW_AT)]) for c in curves],
    )


def clip_section(cfg, tr: Trained) -> dict:
    """How often the clip engages during training (GRPO and PPO)."""
    out = {}
    for algo in ("grpo", "ppo"):
        logs = [tr.clip_logs[algo, s] for s in cfg.seeds]
        clipped = [np.array([u["clipped"] for u in lg]) for lg in logs]
        steps = [np.array([u["steps"] for u in lg]) for lg in logs]
        out[algo] = dict(
            updates_with_clip_per_seed=[int((c.sum(1) > 0).sum()) for c in clipped],
            share_per_seed=[rnd(c.sum() / (n.sum() * cfg.passes)) for c, n in zip(clipped, steps)],
            share_of_step_passes_clipped=rnd(sum(c.sum() for c in clipped) / sum(n.sum() * cfg.passes for n in steps)),
            mean_abs_advantage=rnd(np.mean([u["mean_abs_adv"] for lg in logs for u in lg])),
            updates=cfg.rounds,
        )
    return out


def e1_section(W_grpo, best_table, rounds):
    """The showcase floor, 8 untrained plays and 8 plays of the trained GRPO bot."""
    show = new_floor(np.random.default_rng(config.SHOWCASE_SEED))
    W0 = np.zeros((4, 2))
    rng_b, rng_a = np.random.default_rng([config.SHOWCASE_SEED, 1]), np.random.default_rng([config.SHOWCASE_SEED, 2])
    before = [play(W0, show, rng_b) for _ in range(config.SHOW_PLAYS)]
    after = [play(W_grpo, show, rng_a) for _ in range(config.SHOW_PLAYS)]
    exact = {}
    for name, table in (("untrained", leap_table(W0)), ("grpo", leap_table(W_grpo)), ("best", best_table)):
        v, p = exact_outcomes(table, [show])
        exact[name] = dict(score=rnd(v[0]), exit=rnd(p[0]))
    wide_tiles = {t + d for t, w in channels(show) if w == 2 for d in (0, 1)}
    e1 = dict(
        floor=floor_info(show),
        floor_seed=config.SHOWCASE_SEED,
        before=[run_info(r) for r in before],
        after=[run_info(r) for r in after],
        before_exits=sum(reached_exit(r) for r in before),
        after_exits=sum(reached_exit(r) for r in after),
        before_mean_tile=rnd(np.mean([r.path[-1] for r in before])),
        after_mean_tile=rnd(np.mean([r.path[-1] for r in after])),
        after_falls_all_at_wide=bool(all(reached_exit(r) or int(r.path[-1]) in wide_tiles for r in after)),
        after_fall_kinds=[fall_kind(r, show) for r in after],
        before_fall_kinds=[fall_kind(r, show) for r in before],
        exact=exact,
    )
    return e1, dict(lava=show, before=before, after=after, rounds=rounds)  # the title comes from claims.e1_claim


def e3b_section(W_ppo, v_ppo, ppo_score, source):
    """The critic's blind spot: one forecast from the start line, very different floors."""
    start_view = sensors(np.zeros(FLOOR, dtype=bool), 0)
    forecast = float(start_view @ v_ppo)
    (easy_i, easy, easy_runs), (hard_i, hard, hard_runs) = blind_spot_floors(W_ppo)
    if not all((x.states[0] == start_view).all() for x in easy_runs + hard_runs):
        raise AssertionError("a run's first view differs from the start view")
    easy_r = np.array([x.reward for x in easy_runs])
    hard_r = np.array([x.reward for x in hard_runs])
    easy_adv, hard_adv = group_advantage(easy_r), group_advantage(hard_r)
    hard_best = int(np.argmax(hard_r))

    def side(i, lava, r):
        return dict(
            draw=i,
            floor=floor_info(lava),
            rewards=rnd_list(r),
            mean=rnd(r.mean()),
            worst=rnd(r.min()),
            best=rnd(r.max()),
            exits=int((r == 1).sum()),
            critic_adv_from_start=rnd_list(r - forecast),
        )

    e3b = dict(
        policy=source,
        critic_v=rounded(v_ppo, 4),
        forecast_from_start=rnd(forecast),
        draws=config.BLIND_DRAWS,
        floor_seed=config.BLIND_SEED,
        easy=side(easy_i, easy, easy_r),
        hard=side(hard_i, hard, hard_r),
        separated=bool(easy_r.min() > hard_r.max()),
        grpo_adv_easy=rnd_list(easy_adv),
        grpo_adv_hard=rnd_list(hard_adv),
        hard_best_run=dict(
            run_info(hard_runs[hard_best]),
            fall=fall_kind(hard_runs[hard_best], hard),
            grpo_adv=rnd(hard_adv[hard_best]),
            critic_adv=rnd(hard_r[hard_best] - forecast),
        ),
        ppo_avg_score=ppo_score,
    )
    return e3b, dict(easy=easy, hard=hard, easy_runs=easy_runs, hard_runs=hard_runs, forecast=forecast)


def blind_spot_floors(W_ppo):
    """E3b's draws: the same BLIND_DRAWS floors, each played SHOW_PLAYS times with its own generator;
    returns ((index, floor, runs) of the easiest, of the hardest) by group mean score."""
    drawn = []
    for i, lava in enumerate(new_floors(np.random.default_rng(config.BLIND_SEED), config.BLIND_DRAWS)):
        prng = np.random.default_rng([config.BLIND_SEED, i])
        runs = [play(W_ppo, lava, prng) for _ in range(config.SHOW_PLAYS)]
        drawn.append((np.mean([x.reward for x in runs]), i, lava, runs))
    hard = min(drawn, key=lambda d: d[0])
    easy = max(drawn, key=lambda d: d[0])
    return easy[1:], hard[1:]


def e5_section(cfg, tr: Trained) -> dict:
    first = cfg.seeds[0]
    W = tr.weights["grpo", first][0]

    def all_seeds(algo):
        tables = [leap_table(tr.weights[algo, s][0]) for s in cfg.seeds]
        return {format(b, "03b"): [rnd(t[b]) for t in tables] for b in range(8)}

    return dict(
        W=rounded(W, 4),
        leap_minus_step=rounded(W[:, 1] - W[:, 0], 4),
        leap_table=keyed_table(leap_table(W)),
        leap_table_all_seeds=all_seeds("grpo"),
        reinforce_leap_table=keyed_table(leap_table(tr.weights["reinforce", first][0])),
        reinforce_leap_table_all_seeds=all_seeds("reinforce"),
        ppo_leap_table=keyed_table(leap_table(tr.weights["ppo", first][0])),
        never_occurs=[format(b, "03b") for b in NEVER],
    )


def floor_stats(test) -> dict:
    n_ch = [len(channels(f)) for f in test]
    n_wide = [sum(w == 2 for _, w in channels(f)) for f in test]
    return dict(
        mean_channels=rnd(np.mean(n_ch)),
        mean_wide=rnd(np.mean(n_wide)),
        share_with_no_wide=rnd(np.mean(np.array(n_wide) == 0)),
    )


def narrative_claims(cfg, tr: Trained, summary: dict, walk: dict, e1_chart: dict, test) -> tuple[list, dict]:
    """Every narrative claim checked over every seed (claims.py): the check rows and the titles they pick."""
    seeds, updates = cfg.seeds, summary["curves"]["updates"]
    rows, titles = [], {}
    grpo_tables = [leap_table(tr.weights["grpo", s][0]) for s in seeds]
    e1 = summary["e1"]
    row, titles["e1"] = claims.e1_claim(
        seeds,
        grpo_tables,
        e1_chart["lava"],
        e1["after_falls_all_at_wide"],
        e1["before_mean_tile"],
        e1["after_mean_tile"],
    )
    rows.append(row)
    rows.append(claims.ordering_claim(summary["comparisons"]))
    slow = seeds.index(summary["grpo_slow_seed"]["seed"])
    row, titles["slow"] = claims.plateau_claim(seeds, updates, tr.curves["grpo"], slow, config.PLATEAU)
    titles["slow_plateau"] = row["values"]["plateau_span"][slow] if row["holds"] else None
    rows.append(row)
    replays = [replay_group(cfg, tr.snaps["grpo", s][config.WALK_AT][0]) for s in seeds]
    rows.append(claims.e3a_claim(seeds, [r[0] for r in replays], [r[1] for r in replays], cfg.G))
    easy_worst, hard_best, forecasts = [], [], []
    start_view = sensors(np.zeros(FLOOR, dtype=bool), 0)
    for s in seeds:
        W_ppo, v_ppo = tr.weights["ppo", s]
        (_, _, easy_runs), (_, _, hard_runs) = blind_spot_floors(W_ppo)
        easy_worst.append(min(x.reward for x in easy_runs))
        hard_best.append(max(x.reward for x in hard_runs))
        forecasts.append(float(start_view @ v_ppo))
    row, titles["e3b"] = claims.e3b_claim(seeds, easy_worst, hard_best, forecasts, config.BLIND_DRAWS)
    rows.append(row)
    keyed = [{format(b, "03b"): float(t[b]) for b in range(8)} for t in grpo_tables]
    stacked = []
    for t in grpo_tables:
        for q in (0.0, 1.0):
            alt = t.copy()
            alt[0b000] = q
            stacked.append(alt)
    scores = outcomes_many(np.array([*grpo_tables, *stacked]), test)[0].mean(axis=1)
    n = len(seeds)
    score_if_000 = [dict(own=scores[i], step=scores[n + 2 * i], leap=scores[n + 2 * i + 1]) for i in range(n)]
    e5_rows, titles["e5"] = claims.e5_claims(seeds, keyed, score_if_000)
    rows += e5_rows
    return rows, titles


def run_study(cfg: config.LavaLeapConfig, store: Store) -> Study:
    """Run every experiment; returns the two JSON documents, the checks and what the charts draw."""
    test = new_floors(np.random.default_rng(config.TEST_SEED), config.N_TEST)
    summary = dict(
        config=dict(
            lr=cfg.lr,
            eps=cfg.eps,
            G=cfg.G,
            passes=cfg.passes,
            rounds=cfg.rounds,
            eval_every=cfg.eval_every,
            lr_critic=cfg.lr_critic,
            seeds=cfg.seeds,
            test_seed=config.TEST_SEED,
            n_test_floors=config.N_TEST,
            adv_eps=ADV_EPS,
            std="population (ddof=0)",
        )
    )
    say("lava-leap: untrained baseline and the exact ceiling over all 256 deterministic policies")
    sim_rng = np.random.default_rng(config.SIM_SEED)
    summary["untrained"], summary["ceiling"], best_table = baseline_and_ceiling(test, sim_rng)
    ceiling = summary["ceiling"]["score"]

    tr = train_all(cfg, store)
    updates = list(range(0, cfg.rounds + 1, cfg.eval_every))
    summary["curves"] = dict(
        updates=updates,
        **{
            a: dict(per_seed=[rnd_list(c) for c in tr.curves[a]], mean=rnd_list(np.mean(tr.curves[a], axis=0)))
            for a in ALGOS
        },
    )
    summary["final"] = finals_section(cfg, tr, updates, ceiling, test, sim_rng)
    summary["grpo_slow_seed"] = slow_seed_section(cfg, tr, updates)
    summary["lr_sensitivity"] = uncertainty.lr_sensitivity(cfg, tr.by_lr, config.LR_SWEEP, ceiling)
    summary["clip_stats"] = clip_section(cfg, tr)

    say("lava-leap: showcase floor, walkthrough of one GRPO update, the critic's blind spot")
    first = cfg.seeds[0]
    W_grpo = tr.weights["grpo", first][0]
    summary["e1"], e1_chart = e1_section(W_grpo, best_table, cfg.rounds)
    W_mid = tr.snaps["grpo", first][config.WALK_AT][0]
    summary["e3a"], walk, e3a_chart, e4_chart = walkthrough(cfg, W_mid, test)
    W_ppo, v_ppo = tr.weights["ppo", first]
    summary["e3b"], e3b_chart = e3b_section(
        W_ppo, v_ppo, summary["final"]["ppo"]["per_seed"][0]["score"], f"PPO seed {first} after {cfg.rounds} updates"
    )
    summary["e5"] = e5_section(cfg, tr)
    summary["e6"] = dict(
        untrained=summary["untrained"]["exit_rate"],
        **{
            a: dict(
                mean=summary["final"][a]["exit_mean"],
                min=summary["final"][a]["exit_min"],
                max=summary["final"][a]["exit_max"],
                ci95=summary["final"][a]["exit_ci95"],
            )
            for a in ALGOS
        },
        ceiling=summary["ceiling"]["exit_rate"],
    )
    summary["test_floor_stats"] = floor_stats(test)

    finals = {a: [p["score"] for p in summary["final"][a]["per_seed"]] for a in ALGOS}
    summary["comparisons"] = uncertainty.pairwise(finals, cfg.seeds, name=NAME.get)
    say("lava-leap: the learning rates, chosen on the training seeds, compared on fresh validation seeds")
    cands = uncertainty.candidates(cfg, config.LR_SWEEP)
    chosen = uncertainty.choose(tr.by_lr, cands)
    summary["lr_selection"] = uncertainty.lr_selection(
        cfg, tr.by_lr, cands, chosen, validate_lrs(cfg, store, chosen), ceiling
    )

    say("lava-leap: the narrative's claims, checked over every seed")
    claim_rows, titles = narrative_claims(cfg, tr, summary, walk, e1_chart, test)
    gr = summary["final"]["grpo"]
    e2_title = f"GRPO reaches {gr['pct_of_ceiling']:.0f}% of the best achievable score"
    if gr["pct_of_ceiling_ci95"] is not None:
        lo, hi = gr["pct_of_ceiling_ci95"]
        e2_title += f" (95% CI {lo:.0f}-{hi:.0f}%)"
    slow = summary["grpo_slow_seed"]
    charts = dict(
        e1=dict(e1_chart, title=titles["e1"]),
        e2=dict(
            updates=updates,
            curves=tr.curves,
            ceiling=ceiling,
            untrained=summary["untrained"]["score"],
            n_seeds=len(cfg.seeds),
            G=cfg.G,
            title=e2_title,
        ),
        e3a=e3a_chart,
        e3b=dict(e3b_chart, title=titles["e3b"]),
        e4=e4_chart,
        e5=dict(
            before=leap_table(np.zeros((4, 2))),
            after=[leap_table(tr.weights["grpo", s][0]) for s in cfg.seeds],
            rounds=cfg.rounds,
            title=titles["e5"],
        ),
        slow=dict(
            updates=updates,
            curves=tr.curves["grpo"],
            seeds=cfg.seeds,
            slow=cfg.seeds.index(slow["seed"]),
            window=config.PLATEAU,
            plateau=titles["slow_plateau"],
            title=titles["slow"],
        ),
        walk=dict(walk=walk, title=walk_title(walk)),
    )
    summary["chart_titles"] = {k: v["title"] for k, v in charts.items()}
    floors = test + new_floors(np.random.default_rng(config.BLIND_SEED), config.BLIND_DRAWS) + [e1_chart["lava"]]
    checks = evaluate_checks(summary, walk, floors, claim_rows)
    return Study(summary=summary, walkthrough=walk, checks=checks, charts=charts)


def walk_title(walk: dict) -> str:
    """The walkthrough chart's title: which occurring pattern's P(LEAP) the update moved most."""
    before, after = walk["policy"]["leap_table"], walk["leap_table_final"]
    b = max(OCCURRING, key=lambda i: (abs(after[i] - before[i]), -i))
    return (
        f"One update moves P(LEAP | {b:03b}) from {before[b]:.2f} to {after[b]:.2f}; "
        f"the test score goes from {walk['policy']['test_score']:.3f} to {walk['test_score_after']:.3f}"
    )
