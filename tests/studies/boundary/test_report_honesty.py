"""The reports say what their numbers are: failures before the push are counted and labelled apart, the
boundary intervals state the grid's resolution, a log-rank verdict that disagrees with the boundary
shift is explained, clip captions name the checkpoint, never the key's version prefix, and survival's S,
"censored" and %BW come after their plain words. Each page is read as Chromium renders it."""

from __future__ import annotations

import json
import re

import pytest

from policylab.report.browser import render_check
from policylab.report.charts import plt
from policylab.rollout.store import Store
from policylab.studies.boundary import failure
from policylab.studies.boundary.diff import diff_reductions
from policylab.studies.boundary.reduce import reduce_sweep
from policylab.studies.boundary.report import danger_map, diff_report, sweep_report
from tests.support.boundary_fixtures import cli, one_row_sweep
from tests.support.words import blank_tiles, unexplained

# go1_v0 on slippery floors: most robots fall walking, before the push at 2 s; the one cell with
# 0 < S < 1 (mu 0.3, push 30 %BW) has seed 0 falling at 0.82 s, so its "boundary" clip is a fall before the push
LOW_MU = (
    "--n-mu",
    "3",
    "--mu-min",
    "0.1",
    "--mu-max",
    "0.3",
    "--n-push",
    "2",
    "--push-min",
    "10",
    "--push-max",
    "30",
    "--seeds-per-cell",
    "4",
)


def _ok(*args):
    r = cli(*args)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r


@pytest.mark.slow
def test_failures_before_the_push_are_shown_apart(tmp_path):
    store, ana = tmp_path / "store", tmp_path / "ana"
    _ok("sweep", "--checkpoint", "go1_v0", *LOW_MU, "--store", store)
    _ok("verify", "--checkpoint", "go1_v0", "--store", store, "--sample", "2")
    _ok("reduce", "--store", store, "--checkpoint", "go1_v0", "--resamples", "200", "--out", ana)
    _ok("select", "--out", ana, "--n-boundary", "1", "--n-recoveries", "0")
    _ok("replay", "--out", ana, "--no-verify")
    _ok("clips", "--out", ana, "--width", "96", "--height", "72", "--workers", "1")
    _ok("report", "--out", ana)

    with Store(store) as s:
        records = list(s.records("boundary"))
    early = sum(
        failure.before_push(r.outcome["status"], r.outcome.get("t_fail"), r.data["world"]["push_t0"]) for r in records
    )
    reduction = json.loads((ana / "reduce.json").read_text())
    assert 0 < early < reduction["totals"]["failed"]
    assert reduction["failed_before_push"] == early == sum(c["n_failed_before_push"] for c in reduction["cells"])
    assert reduction["totals"]["failed"] == sum(r.outcome["status"] == "failed" for r in records)  # S unchanged

    clips = json.loads((ana / "clips" / "clips.json").read_text())
    assert [(c["mu"], c["push_pct_bw"], c["t_fail"], c["before_push"]) for c in clips] == [(0.3, 30.0, 0.82, True)]
    html = ana / "report" / "report.html"
    page = render_check(html)
    assert page["loaded"] == page["images"] >= 2, page
    text = page["text"]
    assert f"Failures before the push: {early} of {reduction['totals']['failed']} failures" in text
    assert "failed before push" in text  # the per-cell column
    captions = re.findall(r"<video [^>]*></video>\s*<figcaption>(.*?) \(<a href", html.read_text(), re.S)
    assert len(captions) == 1 and captions[0] in text  # as the browser shows it
    assert captions[0].startswith("go1_v0: mu 0.3, push 30 %BW, seed ")  # the checkpoint, not the key's v2|
    assert captions[0].endswith("failed at 0.82 s, before the push started (walking, not pushed)")
    assert "boundary" not in captions[0]  # no push-failure label on a fall before the push
    assert "do not include the grid's resolution (push step 20 %BW)" in text


def test_a_logrank_verdict_against_the_boundary_shift_is_explained(tmp_path):
    """B survives the 20 %BW cell more often (its boundary moves outward), but where every robot of both
    falls (30 and 40 %BW) B's fall sooner, which the log-rank test counts as B failing earlier."""
    pushes = [10.0, 20.0, 30.0, 40.0]
    a = one_row_sweep("a", pushes, [(0, None), (6, 2.6), (8, 2.6), (8, 2.6)])
    b = one_row_sweep("b", pushes, [(0, None), (2, 2.6), (8, 2.05), (8, 2.05)])
    with Store(tmp_path / "store") as store:
        ra, rb = (reduce_sweep(store, s, resamples=200, seed=0, check_rule=False) for s in (a, b))
    row = diff_reductions(ra, rb, q=0.05)["boundary_displacement"][0]
    assert row["displacement"] > 0 and row["logrank_row_direction"] == "B fails earlier/more"
    assert row["logrank_disagrees"] and row["logrank_cells_all_fell"] == [30.0, 40.0]
    assert ra["boundary"][0]["between"] == [10.0, 20.0] and rb["boundary"][0]["between"] == [20.0, 30.0]

    (tmp_path / "diff").mkdir()
    html = diff_report(tmp_path / "diff", diff_reductions(ra, rb, q=0.05))
    page = render_check(html)
    assert page["loaded"] == page["images"] == 3, page
    assert "In 1 row(s) the log-rank direction disagrees with the boundary shift" in page["text"]
    assert (
        "the boundary moved outward (B survives larger pushes), yet the log-rank test says B fails earlier/more"
        in page["text"]
    )
    assert "in 2 cell(s) (push 30, 40 %BW) every robot of both checkpoints fell" in page["text"]

    agreeing = diff_reductions(
        ra,
        reduce_sweep(
            Store(tmp_path / "s2"),
            one_row_sweep("c", pushes, [(0, None), (2, 2.6), (8, 2.6), (8, 2.6)]),
            resamples=200,
            seed=0,
            check_rule=False,
        ),
        q=0.05,
    )
    assert not agreeing["boundary_displacement"][0]["logrank_disagrees"]  # same times where all fell: no conflict


def test_sweep_and_diff_pages_say_the_plain_words_first(tmp_path):
    """The sweep page's headline read "censored (survived 5 s)" and its notes "They count in S" and "push step
    20 %BW" with S and %BW said nowhere before; the diff page's first S was in its notes."""
    pushes = [10.0, 20.0, 30.0]
    with Store(tmp_path / "store") as store:
        ra, rb = (
            reduce_sweep(store, one_row_sweep(n, pushes, o), resamples=200, seed=0, check_rule=False)
            for n, o in (("a", [(0, None), (6, 2.6), (8, 2.6)]), ("b", [(0, None), (2, 2.6), (8, 2.05)]))
        )
    texts = {}
    for name, write in (
        ("sweep", lambda out: sweep_report(out, ra, None, None, None, None)),
        ("diff", lambda out: diff_report(out, diff_reductions(ra, rb, q=0.05))),
    ):
        (tmp_path / name).mkdir()
        page = render_check(write(tmp_path / name))
        assert page["loaded"] == page["images"] > 0, page
        texts[name] = page["text"]
        assert unexplained(page["text"]) == [], name
        assert blank_tiles(page["tiles"]) == [] and len(page["tiles"]) >= 3, (name, page["tiles"])
    assert "survived to the end (censored) 10" in texts["sweep"]  # the headline tile: 8 + 2 + 0 survivors


def _reduced(tmp_path, outcomes, name="a"):
    with Store(tmp_path / "store") as store:
        return reduce_sweep(
            store, one_row_sweep(name, [10.0, 20.0, 30.0], outcomes), resamples=200, seed=0, check_rule=False
        )


def test_the_danger_map_legend_stays_off_the_cells_and_names_only_what_is_drawn(tmp_path):
    """The legend sat over the map's lower right cells, the title named squares, diamonds and triangles on maps
    that had none, and the before-push counts were 6-point purple on dark red."""
    red = _reduced(tmp_path, [(0, None), (4, 1.0), (8, 2.6)])  # 4 fall at 1.0 s, before the 2 s push
    selection = {"boundary_cells": [{"row": 1.0, "col": 20.0}], "recoveries": [{"row": 1.0, "col": 20.0}]}
    for sel, marks in ((selection, {"replayed boundary cell", "recovery"}), (None, set())):
        fig, caption = danger_map(red, sel)
        fig.canvas.draw()
        (ax, _colorbar) = fig.axes
        legend = ax.get_legend()
        labels = {t.get_text() for t in legend.get_texts()}
        assert labels == {"boundary: bootstrap median, 95% CI", "failed before the push (count)"} | marks
        assert not legend.get_window_extent().overlaps(ax.get_window_extent())  # not over the data area
        assert not any(w in ax.get_title() for w in ("square", "diamond", "triangle"))
        counts = [t for t in ax.texts if t.get_text() == "4"]
        assert counts and all(t.get_fontsize() >= 8 and t.get_path_effects() for t in counts)
        assert caption == "Danger (1 - Kaplan-Meier survival at the horizon) with the boundary"  # no training band
        plt.close(fig)


def test_a_zero_width_interval_is_shown_with_the_grid_step(tmp_path):
    """S falls from 1 to 0 between two cells: every resample crosses at one push, the interval has zero width,
    and the page showed [15, 15] with the grid step columns away from it and the chart with nothing at all."""
    red = _reduced(tmp_path, [(0, None), (8, 2.6), (8, 2.6)])
    (row,) = red["boundary"]
    assert row["ci95"][0] == row["ci95"][1] and row["grid_step"] == 10
    (tmp_path / "sweep").mkdir()
    html = sweep_report(tmp_path / "sweep", red, None, None, None, None).read_text()
    assert "a grey bar spans those two cells, the grid step (10 %BW)" in html
    header = re.search(r"<h2>Boundary per friction row.*?</tr>", html, re.S).group(0)
    assert re.search(r"<th>ci95</th><th>between cells</th><th>grid step</th>", header)
    diff = diff_reductions(red, _reduced(tmp_path, [(0, None), (4, 2.6), (8, 2.6)], "b"), q=0.05)
    assert diff["boundary_displacement"][0]["a"].endswith(", grid step 10")
