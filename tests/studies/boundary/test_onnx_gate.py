"""ONNX policies run through sweep, verify and report; the same weights as an .npz give the same outcomes
and trajectories within float32 tolerance; the equivalence gate holds bitwise for the ONNX policy; diff
and report refuse a sweep whose gate never passed; bad policy files are refused before anything runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from policylab.policies import linear
from policylab.rollout.store import Store
from policylab.studies.boundary import gate
from tests.support.boundary_fixtures import cli, pd_checkpoint

# float32 ONNX vs float64 npz, same weights (the PD hold): max |dqpos| up to each rollout's failure (the
# whole 5 s for survivors) was 4e-5 m; after a fall the tumbling body's contacts amplify the float32
# rounding (0.04 m measured), so the tolerance holds up to the failure
QPOS_TOL = 1e-4
GRID = [
    "--n-mu",
    2,
    "--mu-min",
    0.5,
    "--mu-max",
    1.0,
    "--n-push",
    2,
    "--push-min",
    50,
    "--push-max",
    300,
    "--seeds-per-cell",
    3,
]


def linear_as_onnx(npz: Path, path: Path, *, obs_dim: int | None = None, outputs: int = 1) -> Path:
    """The linear policy a = clip(W (x - mean) / std, -1, 1) as an ONNX graph (float32), built with onnx's
    helper API."""
    p = linear.load(npz)
    w = p.weights.T.astype(np.float32)
    nodes = [
        helper.make_node("Sub", ["obs", "mean"], ["c"]),
        helper.make_node("Div", ["c", "std"], ["z"]),
        helper.make_node("MatMul", ["z", "w"], ["y"]),
        helper.make_node("Clip", ["y", "lo", "hi"], ["action"]),
    ]
    outs = [helper.make_tensor_value_info("action", TensorProto.FLOAT, ["batch", 8])]
    if outputs == 2:
        nodes.append(helper.make_node("Identity", ["y"], ["raw"]))
        outs.append(helper.make_tensor_value_info("raw", TensorProto.FLOAT, ["batch", 8]))
    inits = [
        numpy_helper.from_array(p.obs_mean.astype(np.float32), "mean"),
        numpy_helper.from_array(p.obs_std.astype(np.float32), "std"),
        numpy_helper.from_array(w, "w"),
        numpy_helper.from_array(np.array(-1.0, np.float32), "lo"),
        numpy_helper.from_array(np.array(1.0, np.float32), "hi"),
    ]
    graph = helper.make_graph(
        nodes,
        "linear",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", obs_dim or 27])],
        outs,
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    if obs_dim is None:
        onnx.checker.check_model(model)
    path.write_bytes(model.SerializeToString())
    return path


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """The pd_soft weights swept twice into one store: as .npz and as .onnx (both Ant, same grid)."""
    base = tmp_path_factory.mktemp("onnx")
    npz = pd_checkpoint(base / "ckpt", "pd_soft")
    onx = linear_as_onnx(npz, base / "ckpt" / "pd_soft_onnx.onnx")
    for ck in (npz, onx):
        res = cli(
            "sweep",
            "--robot",
            "ant",
            "--checkpoint",
            ck,
            *GRID,
            "--store",
            base / "store",
            "--out",
            base / f"sweep-{ck.stem}",
        )
        assert res.returncode == 0, res.stderr
    return base, npz, onx


def test_onnx_outcomes_equal_npz_and_trajectories_agree(pair):
    base, _, _ = pair
    with Store(base / "store") as s:
        by = {}
        for r in s.records("boundary"):
            by.setdefault(r.data["world"]["checkpoint"]["name"], {})[r.data["world"]["cache_key"]] = r
        assert sorted(by) == ["pd_soft", "pd_soft_onnx"] and len(by["pd_soft"]) == 12
        worst = 0.0
        for key, a in by["pd_soft"].items():
            b = by["pd_soft_onnx"][key]
            assert a.outcome["status"] == b.outcome["status"] and a.outcome["t_fail"] == b.outcome["t_fail"]
            qa, qb = s.payload(a.key)["qpos"], s.payload(b.key)["qpos"]
            end = len(qa) if a.outcome["t_fail"] is None else int(round(a.outcome["t_fail"] / 0.05)) + 1
            worst = max(worst, float(np.abs(qa[:end] - qb[:end]).max()))
        assert b.data["policy"]["name"] == "onnx"
    assert 0.0 < worst < QPOS_TOL  # float32 arithmetic: close, not bitwise


def test_onnx_gate_is_bitwise_and_report_runs(pair):
    base, _, onx = pair
    res = cli(
        "verify",
        "--robot",
        "ant",
        "--checkpoint",
        onx,
        "--store",
        base / "store",
        "--sample",
        8,
        "--out",
        base / "v-onnx",
    )
    assert res.returncode == 0, res.stderr
    rep = json.loads((base / "v-onnx" / "equivalence.json").read_text())
    assert rep["passed"] and len(rep["modes"]) == 3
    for mode in rep["modes"].values():  # one batch on 2 threads, alone on 1 thread, reversed in a padded batch
        assert mode["identical"] == 8 and mode["max_abs_qpos_diff"] == 0.0
    assert rep["harness_vs_gymnasium_ant_v5"]["identical"] == 2
    ana = base / "ana-onnx"
    for args in (
        ("reduce", "--store", base / "store", "--checkpoint", "pd_soft_onnx", "--out", ana),
        ("report", "--out", ana),
    ):
        r = cli(*args)
        assert r.returncode == 0, (args[0], r.stderr)


def test_gate_refuses_diff_and_report_until_verify_passes(pair):
    base, npz, onx = pair
    store = base / "store"
    with Store(store) as s:
        for name in ("pd_soft", "pd_soft_onnx"):
            s._db.execute("DELETE FROM meta WHERE name=?", (gate.gate_name(name),))
    res = cli("diff", "--store", store, "--a", "pd_soft", "--b", "pd_soft_onnx", "--out", base / "d1")
    assert res.returncode == 2
    assert res.stderr.strip() == (
        "policylab: error: a: the sweep of 'pd_soft' has no equivalence record (the gate never ran); run "
        f"`policylab boundary verify --robot ant --checkpoint pd_soft --store {store}` first"
    )
    assert not (base / "d1").exists()
    ana = base / "ana-npz"
    assert cli("reduce", "--store", store, "--checkpoint", "pd_soft", "--out", ana).returncode == 0
    res = cli("report", "--out", ana)
    assert (
        res.returncode == 2 and "has no equivalence record" in res.stderr and "policylab boundary verify" in res.stderr
    )
    assert not (ana / "report").exists()
    for ck in (npz, onx):
        assert (
            cli(
                "verify",
                "--robot",
                "ant",
                "--checkpoint",
                ck,
                "--store",
                store,
                "--sample",
                4,
                "--out",
                base / f"v2-{ck.stem}",
            ).returncode
            == 0
        )
    assert cli("report", "--out", ana).returncode == 0
    res = cli("diff", "--store", store, "--a", "pd_soft", "--b", "pd_soft_onnx", "--out", base / "d2")
    assert res.returncode == 0, res.stderr
    d = json.loads((base / "d2" / "diff.json").read_text())
    assert d["summary"]["safer"] == d["summary"]["worse"] == 0  # the same policy in two files
    assert all(c["p_logrank"] > 0.05 and c["q_logrank"] == 1.0 and c["q_fisher"] == 1.0 for c in d["cells"])
    assert all("q_logrank_row" in r for r in d["boundary_displacement"])
    assert cli("report", "--out", base / "d2").returncode == 0
    html = (base / "d2" / "report" / "report.html").read_text()
    assert "q Fisher" in html and "q log-rank" in html and "q_logrank_row" in html
    # a gate record made under other physics settings does not count
    with Store(store) as s:
        rec = s.get_meta(gate.gate_name("pd_soft"))
        s.set_meta(gate.gate_name("pd_soft"), {**rec, "protocol_hash": "0" * 16})
    res = cli("diff", "--store", store, "--a", "pd_soft", "--b", "pd_soft_onnx", "--out", base / "d3")
    assert res.returncode == 2 and "was made for another physics settings" in res.stderr
    # a failed gate does not count either
    with Store(store) as s:
        s.set_meta(gate.gate_name("pd_soft"), {**rec, "passed": False, "identical": 3})
    res = cli("diff", "--store", store, "--a", "pd_soft", "--b", "pd_soft_onnx", "--out", base / "d4")
    assert res.returncode == 2 and "equivalence gate of 'pd_soft' failed (3/4 identical)" in res.stderr
    with Store(store) as s:
        s.set_meta(gate.gate_name("pd_soft"), rec)


def test_bad_onnx_files_are_refused(tmp_path):
    npz = pd_checkpoint(tmp_path, "pd_soft")
    (tmp_path / "junk.onnx").write_bytes(b"not a protobuf at all \x00\x01")
    cases = {
        "junk.onnx": "is not a valid ONNX model",
        linear_as_onnx(
            npz, tmp_path / "wide.onnx", obs_dim=30
        ).name: "takes 30 observation values; the ant robot gives 27",
        linear_as_onnx(
            npz, tmp_path / "two.onnx", outputs=2
        ).name: "has 2 outputs (action, raw); name the action output",
    }
    for name, words in cases.items():
        res = cli(
            "sweep",
            "--robot",
            "ant",
            "--checkpoint",
            tmp_path / name,
            "--store",
            tmp_path / "s",
            "--out",
            tmp_path / "o",
        )
        assert res.returncode == 2, res.stderr
        line = res.stderr.strip()
        assert line.startswith("policylab: error: checkpoint: ") and "\n" not in line and words in line, line
    res = cli(
        "sweep",
        "--robot",
        "go1",
        "--checkpoint",
        linear_as_onnx(npz, tmp_path / "ant.onnx"),
        "--store",
        tmp_path / "s",
        "--out",
        tmp_path / "o",
    )
    assert res.returncode == 2 and "takes 27 observation values; the go1 robot gives 36" in res.stderr
    assert not (tmp_path / "s").exists() and not (tmp_path / "o").exists()
