"""`policylab demo`, the README's main job, run once (module fixture, about 40 s on 2 idle cores) and
checked for what the README promises:

- it exits 0 and its stdout ends with the path of its report;
- the training report page opens in headless Chromium with every image loaded and its video
  playable (decoded by the browser to the size and length the report states);
- its conclusions follow from its own store: the 8 screened candidates are the shadow search's top 8
  by the stated rule, the pick is the rule's first on the ALE screening rows, the regret is the best
  screening mean minus the pick's, and the verdict is the stated rule applied to the paired interval
  recomputed here from the validation rows;
- the numbers README.md and docs/breakout.md quote for it (benchmarks/results/train_loop.json,
  demo_pick) are the ones it computes;
- a re-run into the same folder runs nothing (the store's row count and every payload's mtime are
  unchanged) and writes the same report.json.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from policylab.cli import invoke
from policylab.policies.breakout import load_params
from policylab.report import browser
from policylab.report.browser import chromium_path, render_check
from policylab.rollout.store import Store
from policylab.studies.breakout.search.search_space import grid216

from tests.support.paths import ROOT

RULE = "low_score_count asc, score_min desc, score_mean desc"  # the original's rule, the default (docs/breakout.md)
SEARCH_SEEDS, SCREEN_SEEDS = range(0, 6), range(1000, 1005)  # the demo's defaults: --search-seeds 0-5, 5 screening
VALIDATE_SEEDS = range(10000, 10020)  # episodes from --screen-seed 1000, 20 validation episodes from 10000


def run(*args) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = invoke([*map(str, args)])
    return code, out.getvalue()


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "demo"
    code, stdout = run("demo", "--out", out)
    return out, code, stdout


def test_demo_runs_and_ends_with_its_report_path(demo):
    out, code, stdout = demo
    assert code == 0
    assert stdout.strip().splitlines()[-1] == f"report: {out / 'report.html'}"
    for name in ("report.json", "report.html", "policy_params.json", "manifest.json"):
        assert (out / name).is_file(), name


VIDEO_PROBE = """<script>
(function(){
  function stamp(){
    var vs = Array.prototype.slice.call(document.querySelectorAll('video'));
    document.body.setAttribute('data-video-check', vs.map(function(v){
      return [v.readyState, v.videoWidth, v.videoHeight, v.duration, v.error ? v.error.code : 0].join(':');
    }).join(','));
  }
  Array.prototype.slice.call(document.querySelectorAll('video')).forEach(function(v){
    v.preload = 'auto'; v.addEventListener('loadeddata', stamp); v.addEventListener('error', stamp); v.load();
  });
  setInterval(stamp, 100); stamp();
})();
</script></body>"""


def video_states(html: Path) -> list[dict]:
    """Each <video> of a page as headless Chromium sees it after loading: the page itself plus a
    probe script, written beside it (so relative sources resolve) and removed afterwards."""
    probe = html.with_name("_video_probe.html")
    probe.write_text(html.read_text().replace("</body>", VIDEO_PROBE))
    try:
        dom = browser._run(["--dump-dom", probe.resolve().as_uri()])
    finally:
        probe.unlink()
    m = re.search(r'data-video-check="([^"]*)"', dom)
    assert m, "the probe did not run"
    states = []
    for item in filter(None, m.group(1).split(",")):
        ready, w, h, duration, error = item.split(":")
        states.append({"ready": int(ready), "width": int(w), "height": int(h), "duration": float(duration),
                       "error": int(error)})
    return states


@pytest.mark.skipif(chromium_path() is None, reason="Chromium not installed (make setup installs it)")
def test_train_page_in_chromium_every_image_and_the_video_load(demo):
    out, _, _ = demo
    html = out / "report.html"
    seen = render_check(html)
    figures = re.findall(r'<img src="([^"]+)"', html.read_text())
    assert len(figures) == 3 and all((out / f).is_file() for f in figures)
    assert seen["images"] == len(figures) and seen["loaded"] == seen["images"]
    video = json.loads((out / "report.json").read_text())["evidence"]["video"]
    (state,) = video_states(html)
    # readyState >= 2: the browser decoded the current frame; ALE's screen is 160 x 210
    assert state["error"] == 0 and state["ready"] >= 2, state
    assert (state["width"], state["height"]) == (160, 210)
    assert state["duration"] == pytest.approx(video["frames"] / video["fps"], abs=0.1)


# -- conclusions from the store ---------------------------------------------------------------------

def rows_by_params(store_root: Path) -> dict[tuple[str, str], dict[int, float]]:
    """(env, canonical params) -> {seed: score} over every record of the demo's store."""
    out: dict[tuple[str, str], dict[int, float]] = {}
    with Store(store_root) as store:
        for rec in store.records("breakout"):
            if rec.data["protocol"].get("capture_every"):
                continue  # the video's own record (same episode, frames captured)
            key = (rec.data["world"]["env"], json.dumps(rec.data["policy"]["params"], sort_keys=True))
            out.setdefault(key, {})[rec.data["world"]["seed"]] = float(rec.outcome["score"])
    return out


def summary(scores: list[float]) -> dict:
    return {"low_score_count": sum(s < 3 for s in scores), "score_min": min(scores),
            "score_mean": sum(scores) / len(scores)}


def rank(items: list[tuple[str, list[float]]]) -> list[str]:
    """Params sorted by RULE, stable (ties keep the given order)."""
    def key(item):
        s = summary(item[1])
        return (s["low_score_count"], -s["score_min"], -s["score_mean"])
    return [p for p, _ in sorted(items, key=key)]


def paired_interval(new, base, resamples=2000, seed=0) -> list[float]:
    """docs/breakout.md, training loop step 4: 2000 bootstrap resamples of seeds (PCG64 seed 0), the
    2.5/97.5% percentiles of the resampled mean paired delta."""
    d = np.asarray(new, float) - np.asarray(base, float)
    idx = np.random.Generator(np.random.PCG64(seed)).integers(0, d.size, size=(resamples, d.size))
    return [float(v) for v in np.quantile(d[idx].sum(axis=1) / d.size, [0.025, 0.975])]


def test_selection_regret_and_verdict_follow_from_the_store(demo):
    out, _, _ = demo
    data = json.loads((out / "report.json").read_text())
    rows = rows_by_params(out / "store")
    # the grid's candidate order (c000..c215, docs/breakout.md) breaks ties, as the stable sort does
    grid = [json.dumps(c["params"], sort_keys=True) for c in grid216()]
    # search: every grid candidate on the shadow, seeds 0-5; the top 8 by the rule are screened
    assert {p for env, p in rows if env == "shadow"} == set(grid)
    top8 = rank([(p, [rows[("shadow", p)][i] for i in SEARCH_SEEDS]) for p in grid])[:8]
    screened = [json.dumps(r["params"], sort_keys=True) for r in data["training"]["screening"]]
    assert screened == top8
    # screening: the pick is the rule's first on the ALE screening rows of those 8
    screening = [(p, [rows[("ale", p)][s] for s in SCREEN_SEEDS]) for p in top8]
    pick = rank(screening)[0]
    params = json.loads((out / "policy_params.json").read_text())["params"]
    assert json.dumps(params, sort_keys=True) == pick
    means = {p: float(np.mean(s)) for p, s in screening}
    regret = data["evaluation"]["regret"]
    assert regret["regret"] == pytest.approx(max(means.values()) - means[pick], abs=1e-9)
    # validation: the pick and the baseline on 20 fresh ALE seeds, paired by seed
    base_p = json.dumps(load_params("breakout_policy_v3", None), sort_keys=True)
    new = [rows[("ale", pick)][s] for s in VALIDATE_SEEDS]
    base = [rows[("ale", base_p)][s] for s in VALIDATE_SEEDS]
    ci = paired_interval(new, base)
    ev = data["evaluation"]
    assert [(r["seed"], r["pick_score"], r["baseline_score"]) for r in ev["paired_by_seed"]] == \
        list(zip(VALIDATE_SEEDS, new, base))
    assert ev["paired_delta"]["ci95"] == pytest.approx(ci, abs=1e-9)
    want = "improved" if ci[0] > 0 else "worse" if ci[1] < 0 else "inconclusive"
    assert data["decision"]["verdict"] == want


def test_the_exact_shadow_replays_every_ale_episode_of_the_demo(demo):
    """The demo searches on `ale-exact`, the default preset, so the shadow plays ALE's game on each
    seed: every ALE episode the demo stored (the screening and the validation) scores the same in
    the shadow on its seed and parameters. This is why docs/breakout.md calls the ALE screening a
    check the exact shadow makes redundant (it adds fresh seeds, not a second simulator)."""
    from policylab.studies.breakout.episodes.runner import EpisodeTask, run_shadow_group

    out, _, _ = demo
    data = json.loads((out / "report.json").read_text())
    assert data["objective"]["preset"] == "ale-exact"
    ale = {p: seeds for (env, p), seeds in rows_by_params(out / "store").items() if env == "ale"}
    assert sum(map(len, ale.values())) == 8 * 5 + 2 * 20
    tasks = [EpisodeTask("shadow", tuple(seeds), "breakout_policy_v3", json.loads(p), data["objective"]["protocol"],
                         preset="ale-exact") for p, seeds in ale.items()]
    for (p, seeds), eps in zip(ale.items(), run_shadow_group(tasks)):
        assert [float(e.outcome["score"]) for e in eps] == list(seeds.values()), p

def test_the_quoted_demo_numbers_are_what_the_demo_computes(demo):
    """README.md and docs/breakout.md quote benchmarks/results/train_loop.json's demo_pick (checked
    against the pages by test_quoted_numbers.py); here the file is checked against the program."""
    out, _, _ = demo
    quoted = json.loads((ROOT / "benchmarks" / "results" / "train_loop.json").read_text())["demo_pick"]
    data = json.loads((out / "report.json").read_text())
    ev = data["evaluation"]
    got = {"candidate_id": data["training"]["selected_candidate"]["candidate_id"],
           "screening_ale_mean": data["training"]["selected_candidate"]["score_mean"],
           "validation_ale_mean": ev["new_policy"]["mean"], "validation_ale_mean_ci95": ev["new_policy"]["mean_ci95"],
           "baseline_ale_mean": ev["baseline_policy"]["mean"], "verdict": data["decision"]["verdict"],
           "regret": ev["regret"]["regret"],
           "screened_spearman": data["training"]["shadow_vs_ale_rank_correlation"]["spearman"],
           "paired_delta": {k: ev["paired_delta"][k] for k in ("mean_delta", "ci95", "wins", "losses", "prob_improvement")}}

    def same(q, g, where):
        if isinstance(q, dict):
            for k in q:
                same(q[k], g[k], f"{where}.{k}")
        elif isinstance(q, list):
            assert len(q) == len(g), where
            for i, (a, b) in enumerate(zip(q, g)):
                same(a, b, f"{where}[{i}]")
        elif isinstance(q, float):
            digits = len(repr(q).split(".")[1])  # the file keeps the precision the pages quote
            assert round(g, digits) == q, (where, g, q)
        else:
            assert g == q, (where, g, q)

    for k, v in quoted.items():
        if k in got:
            same(v, got[k], k)


def _rows(store: Path) -> int:
    with sqlite3.connect(store / "index.sqlite") as db:
        return db.execute("SELECT COUNT(*) FROM rollouts").fetchone()[0]


def test_demo_rerun_runs_nothing_and_writes_the_same_report(demo):
    out, _, _ = demo
    report = (out / "report.json").read_bytes()
    rows = _rows(out / "store")
    payloads = {p: p.stat().st_mtime_ns for p in (out / "store" / "payloads").rglob("*.npz")}
    # 216 x 6 shadow search + 8 x 5 screening + 2 x 20 validation + the video's own record
    assert rows == len(payloads) == 216 * 6 + 8 * 5 + 2 * 20 + 1
    code, stdout = run("demo", "--out", out)
    assert code == 0 and stdout.strip().splitlines()[-1] == f"report: {out / 'report.html'}"
    assert _rows(out / "store") == rows
    assert {p: p.stat().st_mtime_ns for p in payloads} == payloads, "a payload was rewritten"
    assert sorted((out / "store" / "payloads").rglob("*.npz")) == sorted(payloads)
    assert (out / "report.json").read_bytes() == report
