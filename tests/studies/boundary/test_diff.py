"""The diff of two sweeps: Fisher exact and Benjamini-Hochberg against scipy and hand numbers, then
`policylab boundary diff` on two small real Ant sweeps (both directions), and its hygiene checks."""

from __future__ import annotations

import json
from math import comb

import numpy as np
import pytest
from scipy import stats as sps

from policylab.rollout.store import Store
from policylab.stats import benjamini_hochberg, fisher_exact
from tests.support.boundary_fixtures import cli, make_sweep

MUS, PUSHES, SPC = [0.65, 1.0], [20.0, 50.0], 16


def test_fisher_by_hand_and_scipy():
    # 0/16 vs 8/16 failed: symmetric table, p = 2 * C(24,16)/C(32,16) (hypergeometric, two-sided)
    assert fisher_exact(0, 16, 8, 16) == pytest.approx(2 * comb(24, 16) / comb(32, 16))
    for a, b in [(3, 12), (16, 16), (0, 0), (5, 7), (1, 15)]:
        want = sps.fisher_exact([[a, 16 - a], [b, 16 - b]]).pvalue
        assert fisher_exact(a, 16, b, 16) == pytest.approx(want)


def test_benjamini_hochberg_by_hand_and_scipy():
    # sorted p .005 .01 .03 .04 vs thresholds .0125 .025 .0375 .05: all pass
    assert benjamini_hochberg([0.01, 0.04, 0.03, 0.005]) == [True, True, True, True]
    # .01 .02 .03 pass; .5 does not
    assert benjamini_hochberg([0.01, 0.02, 0.03, 0.5]) == [True, True, True, False]
    # step-up: .04 fails its own rank-1 threshold alone but nothing passes here
    assert benjamini_hochberg([0.04, 0.9]) == [False, False]
    rng = np.random.default_rng(1)
    for _ in range(20):
        p = np.concatenate([rng.uniform(0, 0.01, 5), rng.uniform(0, 1, 40)])
        want = sps.false_discovery_control(p, method="bh") <= 0.05
        assert benjamini_hochberg(p, q=0.05) == want.tolist()


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    base = tmp_path_factory.mktemp("diff")
    for ckpt in ("pd_soft", "pd_limp"):
        make_sweep(base, ckpt, (0.65, 1.0), 2, (20, 50), 2, SPC)
    return base / "store"


def _counts(store_path, checkpoint):
    """Failed / at-risk counts per (mu, push), straight from the records."""
    counts = {}
    with Store(store_path) as store:
        for rec in store.records("boundary"):
            w, o = rec.data["world"], rec.data["outcome"]
            if w["checkpoint"]["name"] != checkpoint:
                continue
            f, n = counts.get((w["mu"], w["push_pct"]), (0, 0))
            counts[(w["mu"], w["push_pct"])] = (f + (o["status"] == "failed"), n + (o["status"] != "diverged"))
    return counts


def test_diff_cli_on_two_real_sweeps(store_path, tmp_path):
    out = tmp_path / "ab"
    res = cli("diff", "--store", store_path, "--a", "pd_soft", "--b", "pd_limp", "--out", out)
    assert res.returncode == 0, res.stderr
    assert res.report == out / "diff.json"
    assert res.stdout.splitlines()[0].startswith("diff pd_soft -> pd_limp: ")
    d = json.loads((out / "diff.json").read_text())
    ca, cb = _counts(store_path, "pd_soft"), _counts(store_path, "pd_limp")
    pvals = []
    for c in d["cells"]:
        (fa, na), (fb, nb) = ca[(c["row"], c["col"])], cb[(c["row"], c["col"])]
        assert (c["failed_a"], c["n_a"], c["failed_b"], c["n_b"]) == (fa, na, fb, nb)
        assert c["p_fisher"] == pytest.approx(sps.fisher_exact([[fa, na - fa], [fb, nb - fb]]).pvalue)
        assert c["delta_survival"] == pytest.approx((nb - fb) / nb - (na - fa) / na)
        pvals.append(c["p_fisher"])
    significant = sps.false_discovery_control(pvals, method="bh") <= 0.05
    assert [c["significant"] for c in d["cells"]] == significant.tolist()
    worse = [(c["row"], c["col"]) for c in d["cells"] if c["significant"] and c["delta_survival"] < 0]
    safer = [(c["row"], c["col"]) for c in d["cells"] if c["significant"] and c["delta_survival"] > 0]
    # the limp PD hold falls more often: the census must name those cells, wherever they are
    assert worse, "expected pd_limp to be significantly worse somewhere"
    assert [(c["row"], c["col"]) for c in d["shrinkage_census"]["cells"]] == worse
    assert d["shrinkage_census"]["cells_significantly_worse"] == d["summary"]["worse"] == len(worse)
    assert [(c["row"], c["col"]) for c in d["safer_cells"]] == safer
    assert len(d["surface_a"]) == len(MUS) and len(d["surface_a"][0]) == len(PUSHES)
    for r in d["boundary_displacement"]:
        if r["displacement"] is not None:
            assert r["displacement"] == pytest.approx(r["b_median"] - r["a_median"])
        else:
            assert r["note"]

    # the reverse direction names the same cells as made safer, and finds no shrinkage
    back = tmp_path / "ba"
    assert cli("diff", "--store", store_path, "--a", "pd_limp", "--b", "pd_soft", "--out", back).returncode == 0
    r = json.loads((back / "diff.json").read_text())
    assert [(c["row"], c["col"]) for c in r["safer_cells"]] == worse
    assert r["summary"]["worse"] == len(safer)
    first = (back / "diff.json").read_bytes()
    assert cli("diff", "--store", store_path, "--a", "pd_limp", "--b", "pd_soft", "--out", back).returncode == 0
    assert (back / "diff.json").read_bytes() == first


def test_diff_refuses_incomparable_sweeps(store_path, tmp_path):
    other = make_sweep(tmp_path, "pd_limp", (0.65, 0.65), 1, (20, 20), 1, 4)  # another grid, another store
    cases = [
        (["--store", store_path, "--a", "pd_soft", "--b", "pd_soft"], "b"),
        (["--store", store_path, "--a", "pd_soft", "--b", "pd_limp", "--store-b", other], "b"),
        (["--store", store_path, "--a", "pd_soft", "--b", "v9"], "b"),
        (["--store", store_path, "--a", "v9", "--b", "pd_limp"], "a"),
        (["--store", store_path, "--a", "pd_soft", "--b", "pd_limp", "--q", "2"], "q"),
    ]
    for args, field in cases:
        out = tmp_path / "refused"
        res = cli("diff", *args, "--out", out)
        assert res.returncode == 2, res.stderr
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"policylab: error: {field}:"), lines
        assert not out.exists()
