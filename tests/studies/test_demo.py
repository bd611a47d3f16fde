"""`policylab demo`, the README's main job, run once (module fixture, about a minute on 2 idle cores)
and checked for what the README promises:

- it exits 0 and its stdout ends with the path of its report;
- the training report page opens in headless Chromium with every image loaded and its video
  playable (decoded by the browser to the size and length the report states);
- its conclusions follow from its own store: the successive halving (216 x 25, 72 x 75, 24 x 225,
  8 x 675 search seeds, ranked by the mean) replayed here from the stored scores gives the pick, and
  the verdict is the stated rule applied to the paired interval recomputed here from the 2,000
  exact-shadow validation rows; the 20 ALE confirmation episodes score what the shadow scored;
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
from scipy import stats as sps

from policylab.cli import invoke
from policylab.policies.breakout import load_params
from policylab.report import browser
from policylab.report.browser import chromium_path, render_check
from policylab.rollout.store import Store
from policylab.studies.breakout.search.search_space import grid216
from tests.support.paths import ROOT
from tests.support.words import blank_tiles

SCHEDULE = [(216, 25), (72, 75), (24, 225), (8, 675)]  # (candidates, seeds 0..n-1 each) per halving round
EXACT_SEEDS = range(2_000_000, 2_002_000)  # breakout.exact_validation's first 2,000: the verdict's seeds
ALE_SEEDS = EXACT_SEEDS[:20]  # the ALE confirmation sample


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
        states.append(
            {"ready": int(ready), "width": int(w), "height": int(h), "duration": float(duration), "error": int(error)}
        )
    return states


@pytest.mark.skipif(chromium_path() is None, reason="Chromium not installed (make setup installs it)")
def test_train_page_in_chromium_every_image_and_the_video_load(demo):
    out, _, _ = demo
    html = out / "report.html"
    seen = render_check(html)
    assert blank_tiles(seen["tiles"]) == []  # "regret on ALE screening" was blank: the demo screens nothing on ALE
    figures = re.findall(r'<img src="([^"]+)"', html.read_text())
    assert len(figures) == 2 and all((out / f).is_file() for f in figures)
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


def paired_interval(new, base) -> list[float]:
    """docs/breakout.md, training loop step 4: the Student-t 95% interval of the mean paired delta,
    mean +- t(0.975, n - 1) s / sqrt(n) with the deltas' sample sd."""
    d = np.asarray(new, float) - np.asarray(base, float)
    half = sps.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size)
    return [float(d.mean() - half), float(d.mean() + half)]


def test_the_pick_and_the_verdict_follow_from_the_store(demo):
    out, _, _ = demo
    data = json.loads((out / "report.json").read_text())
    rows = rows_by_params(out / "store")
    # the halving, replayed: each round ranks its candidates by their mean over the round's seeds (a
    # stable sort: ties keep the order the candidates came in, the grid's c000..c215 in round 1)
    alive = [json.dumps(c["params"], sort_keys=True) for c in grid216()]
    for count, n in SCHEDULE:
        alive = alive[:count]
        means = {p: float(np.mean([rows[("shadow", p)][s] for s in range(n)])) for p in alive}
        alive = sorted(alive, key=lambda p: -means[p])
    params = json.loads((out / "policy_params.json").read_text())["params"]
    assert json.dumps(params, sort_keys=True) == alive[0]
    assert [(r["candidates"], r["seeds_each"]) for r in data["training"]["rounds"]] == SCHEDULE
    # validation: the pick and the baseline on 2,000 fresh exact-shadow seeds, paired by seed
    base_p = json.dumps(load_params("breakout_policy_v3", None), sort_keys=True)
    new = [rows[("shadow", alive[0])][s] for s in EXACT_SEEDS]
    base = [rows[("shadow", base_p)][s] for s in EXACT_SEEDS]
    ev = data["evaluation"]
    assert [(r["seed"], r["pick_score"], r["baseline_score"]) for r in ev["paired_by_seed"]] == list(
        zip(EXACT_SEEDS, new, base)
    )
    ci = paired_interval(new, base)
    assert ev["paired_delta"]["ci95"] == pytest.approx(ci, abs=1e-9)
    want = "improved" if ci[0] > 0 else "worse" if ci[1] < 0 else "inconclusive"
    assert data["decision"]["verdict"] == want
    # the ALE confirmation: the first 20 seeds on ALE score what the shadow scored, for both policies
    assert [rows[("ale", alive[0])][s] for s in ALE_SEEDS] == new[:20]
    assert [rows[("ale", base_p)][s] for s in ALE_SEEDS] == base[:20]
    assert (ev["ale_confirmation"]["equal"], ev["ale_confirmation"]["of"]) == (20, 20)
    curse = ev["winners_curse"]
    assert curse["search_seeds"] == 675 and curse["validation_mean"] == pytest.approx(np.mean(new))


def test_the_quoted_demo_numbers_are_what_the_demo_computes(demo):
    """README.md and docs/breakout.md quote benchmarks/results/train_loop.json's demo_pick (checked
    against the pages by test_quoted_numbers.py); here the file is checked against the program."""
    out, _, _ = demo
    quoted = json.loads((ROOT / "benchmarks" / "results" / "train_loop.json").read_text())["demo_pick"]
    data = json.loads((out / "report.json").read_text())
    ev, tr, conf = data["evaluation"], data["training"], data["evaluation"]["ale_confirmation"]
    got = {
        "preset": data["objective"]["preset"],
        "candidate_id": tr["selected_candidate"]["candidate_id"],
        "search_mean": ev["winners_curse"]["search_mean"],
        "search_seeds": ev["winners_curse"]["search_seeds"],
        "validation_seeds": ev["paired_delta"]["n"],
        "validation_mean": ev["new_policy"]["mean"],
        "validation_mean_ci95": ev["new_policy"]["mean_ci95"],
        "baseline_mean": ev["baseline_policy"]["mean"],
        "paired_delta": {
            k: ev["paired_delta"][k] for k in ("mean_delta", "ci95", "wins", "losses", "verdict_agreement")
        },
        "verdict": data["decision"]["verdict"],
        "ale_confirmed": conf["equal"],
        "ale_confirmation_seeds": conf["of"],
        "ale_paired_delta": {k: conf["ale"]["paired_delta"][k] for k in ("mean_delta", "ci95")},
        "ale_verdict": conf["ale"]["verdict"],
        "regret_estimate": tr["regret_estimate"]["mean_regret"],
    }

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
    payloads = {p: p.stat().st_mtime_ns for p in (out / "store" / "units").glob("*.pack")}
    # the halving's shadow episodes + 2 x 2,000 exact validation + 2 x 20 ALE confirmation + the video's own record
    search = sum(c * (n - prev) for (c, n), prev in zip(SCHEDULE, [0] + [n for _, n in SCHEDULE[:-1]]))
    assert search == 216 * 25 + 72 * 50 + 24 * 150 + 8 * 450
    assert rows == search + 2 * 2000 + 2 * 20 + 1 and 0 < len(payloads) < rows  # one unit file per unit of work
    code, stdout = run("demo", "--out", out)
    assert code == 0 and stdout.strip().splitlines()[-1] == f"report: {out / 'report.html'}"
    assert _rows(out / "store") == rows
    assert {p: p.stat().st_mtime_ns for p in payloads} == payloads, "a payload was rewritten"
    assert sorted((out / "store" / "units").glob("*.pack")) == sorted(payloads)
    assert (out / "report.json").read_bytes() == report
