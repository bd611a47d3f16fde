"""E3a and E4: one GRPO update on a hard floor, replayed with the trace hook, every number kept.

The representative step: among the lowest-scoring runs' last moves, the one the policy thought least likely."""

from __future__ import annotations

import numpy as np

from policylab.studies.lava_leap import config
from policylab.studies.lava_leap.agent import leap_table, pattern_str, play, policy
from policylab.studies.lava_leap.exact import evaluate
from policylab.studies.lava_leap.floor import EXIT, floor_info, new_floor
from policylab.studies.lava_leap.learners import batch, group_advantage, grpo_update
from policylab.studies.lava_leap.records import rnd, rnd_list, rounded, run_info, words


def walkthrough(cfg, W_mid, test):
    """Returns (summary['e3a'], walkthrough.json, e3a chart args, e4 chart args)."""
    lava = new_floor(np.random.default_rng(config.WALK_SEED))
    rng = np.random.default_rng([config.WALK_SEED, 0])
    group = [play(W_mid, lava, rng) for _ in range(cfg.G)]
    r = np.array([run.reward for run in group])
    adv = group_advantage(r)
    n_pos = int((adv > 0).sum())
    all_died = bool(all(x.reward < 1 for x in group))
    e3a = dict(
        floor=floor_info(lava),
        floor_seed=config.WALK_SEED,
        policy_updates=config.WALK_AT,
        rewards=rnd_list(r),
        advantages=rnd_list(adv),
        mean=rnd(r.mean()),
        std=rnd(r.std()),
        n_positive=n_pos,
        all_died=all_died,
    )
    e3a_title = (
        f"Every run fell, yet the {words(n_pos)} that got furthest earn a positive advantage"
        if all_died
        else "The runs that got furthest earn a positive advantage"
    )

    trace: list[dict] = []
    W_after = grpo_update(W_mid, group, trace=trace, lr=cfg.lr, eps=cfg.eps, passes=cfg.passes)
    S, acts, A = batch(group, adv)
    N = len(acts)
    run_of = np.concatenate([[i] * len(x.actions) for i, x in enumerate(group)]).astype(int)
    step_of = np.concatenate([np.arange(len(x.actions)) for x in group]).astype(int)
    pi_old = trace[0]["pi"][np.arange(N), acts]
    if len(trace) > 1 and not np.allclose(trace[1]["W"], W_mid + cfg.lr * trace[0]["grad"]):
        raise AssertionError("pass 2 does not start from W + lr * grad of pass 1")

    fatal = [int(np.flatnonzero(run_of == i)[-1]) for i in np.flatnonzero(r == r.min())]
    rep = min(fatal, key=lambda j: pi_old[j])
    s = S[rep]
    pi_rep = policy(W_mid, s)
    onehot = np.eye(2)[acts[rep]]
    coef1 = A[rep] / N
    push = np.outer(s, onehot - pi_rep) * coef1

    def step_ref(j):
        return dict(
            index=int(j),
            run=int(run_of[j]) + 1,
            step=int(step_of[j]) + 1,
            tile=int(group[run_of[j]].path[step_of[j]]),
            pattern=pattern_str(S[j]),
            move=["STEP", "LEAP"][acts[j]],
            advantage=rnd(A[j]),
            pi_old=rnd(pi_old[j]),
        )

    band = (1 - cfg.eps, 1 + cfg.eps)
    passes = []
    for k, p in enumerate(trace):
        rho = p["rho"]
        cut = np.flatnonzero(p["clipped"])
        W_next = trace[k + 1]["W"] if k + 1 < len(trace) else W_after
        passes.append(
            dict(
                k=k + 1,
                W_before=rounded(p["W"], 4),
                W_after=rounded(W_next, 4),
                delta_W=rounded(cfg.lr * p["grad"], 5),
                grad=rounded(p["grad"], 5),
                rho_min=rnd(rho.min()),
                rho_max=rnd(rho.max()),
                n_outside_band=int(((rho > band[1]) | (rho < band[0])).sum()),
                n_clipped=int(len(cut)),
                clipped=[dict(step_ref(j), rho=rnd(rho[j])) for j in cut],
                leap_table=rnd_list(leap_table(p["W"])),
                rep_rho=rnd(rho[rep]),
            )
        )
    final_rho = policy(W_after, S)[np.arange(N), acts] / pi_old
    far = np.argsort(-np.abs(np.log(trace[-1]["rho"])), kind="stable")[:4]
    walk = dict(
        policy=dict(
            source=f"GRPO seed {cfg.seeds[0]} after {config.WALK_AT} updates",
            W=rounded(W_mid, 4),
            leap_table=rnd_list(leap_table(W_mid)),
            test_score=rnd(evaluate(W_mid, test)[0]),
        ),
        floor=dict(floor_info(lava), seed=config.WALK_SEED),
        runs=[run_info(x, a) for x, a in zip(group, adv)],
        group=dict(
            mean=rnd(r.mean()),
            std=rnd(r.std()),
            N_steps=int(N),
            mean_tile=rnd(r.mean() * EXIT),
            std_tiles=rnd(r.std() * EXIT),
        ),
        hyper=dict(lr=cfg.lr, eps=cfg.eps, passes=cfg.passes),
        representative=dict(
            step_ref(rep),
            s=s.tolist(),
            active_rows=[int(i) for i in np.flatnonzero(s)],
            W_rows={str(int(i)): rounded(W_mid[i], 4) for i in np.flatnonzero(s)},
            scores=rounded(s @ W_mid, 4),
            p_step=rnd(pi_rep[0]),
            p_leap=rnd(pi_rep[1]),
            onehot_minus_pi=rounded(onehot - pi_rep, 4),
            coef_pass1=rnd(coef1),
            push=rounded(push, 5),
            push_lr=rounded(cfg.lr * push, 5),
            rho_by_pass=[rnd(p["rho"][rep]) for p in trace],
            rho_final=rnd(final_rho[rep]),
        ),
        passes=passes,
        W_final=rounded(W_after, 4),
        leap_table_final=rnd_list(leap_table(W_after)),
        final_rho_min=rnd(final_rho.min()),
        final_rho_max=rnd(final_rho.max()),
        biggest_movers=[
            dict(step_ref(j), rho_pass4=rnd(trace[-1]["rho"][j]), clipped_pass4=bool(trace[-1]["clipped"][j]))
            for j in far
        ],
        total_clipped_step_passes=int(sum(p["n_clipped"] for p in passes)),
        test_score_after=rnd(evaluate(W_after, test)[0]),
        leap_share=dict(
            above_mean=rnd(acts[A > 0].mean()) if (A > 0).any() else None,
            below_mean=rnd(acts[A < 0].mean()) if (A < 0).any() else None,
            n_above=int((A > 0).sum()),
            n_below=int((A < 0).sum()),
            leaps_above=int(acts[A > 0].sum()),
            leaps_below=int(acts[A < 0].sum()),
        ),
        steps=[
            dict(step_ref(j), rho=[rnd(p["rho"][j]) for p in trace], clipped=[bool(p["clipped"][j]) for p in trace])
            for j in range(N)
        ],
    )

    n_clip_last = passes[-1]["n_clipped"]
    pct = f"{100 * cfg.eps:.0f}%"
    e4_title = (
        f"By pass {len(trace)}, {words(n_clip_last)} of {N} steps have hit the {pct} clip and stopped pushing"
        if n_clip_last
        else f"All {N} ratios stay inside the {pct} clip band"
    )
    labels = e4_labels(trace, run_of, step_of, rep)
    e3a_chart = dict(runs=group, r=r, adv=adv, title=e3a_title)
    e4_chart = dict(trace=trace, A=A, labels=labels, eps=cfg.eps, title=e4_title)
    return e3a, walk, e3a_chart, e4_chart


def replay_group(cfg, W_mid) -> tuple[bool, int]:
    """The walkthrough's setup for any policy: G plays of the walkthrough floor with its generator and
    one traced GRPO update; returns (every run fell, clipped step-passes over all passes)."""
    lava = new_floor(np.random.default_rng(config.WALK_SEED))
    rng = np.random.default_rng([config.WALK_SEED, 0])
    group = [play(W_mid, lava, rng) for _ in range(cfg.G)]
    trace: list[dict] = []
    grpo_update(W_mid, group, trace=trace, lr=cfg.lr, eps=cfg.eps, passes=cfg.passes)
    return bool(all(x.reward < 1 for x in group)), int(sum(int(p["clipped"].sum()) for p in trace))


def e4_labels(trace, run_of, step_of, rep):
    """Named points on the ratio chart: steps clipped in the first pass that clips, the largest
    clipped ratio of the last pass, and the representative step if the last pass clipped it."""
    labels: list[tuple[str, tuple[int, int]]] = []

    def label(k, j):
        if all(j != jj for _, (_, jj) in labels):
            labels.append((f"run {run_of[j] + 1}, step {step_of[j] + 1}: {trace[k]['rho'][j]:.2f}", (k, int(j))))

    first = next((k for k, p in enumerate(trace) if p["clipped"].any()), None)
    if first is None:
        return labels
    for j in np.flatnonzero(trace[first]["clipped"]):
        label(first, j)
    last = len(trace) - 1
    cut = np.flatnonzero(trace[last]["clipped"])
    if len(cut):
        label(last, cut[np.argmax(trace[last]["rho"][cut])])
    if trace[last]["clipped"][rep]:
        label(last, rep)
    return labels
