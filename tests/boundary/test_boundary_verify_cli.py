"""Equivalence gate (100% bitwise on CPU MuJoCo) and bad input through the CLI (exit 2, nothing written)."""

import json
import subprocess
import sys

from policylab.rollout.store import Store

PL = [sys.executable, "-m", "policylab.cli", "boundary"]


def _run(args):
    return subprocess.run(PL + args, capture_output=True, text=True)


def test_equivalence_gate_is_bitwise(tmp_path, small_sweep):
    store_root, _ = small_sweep
    r = _run(["verify", "--checkpoint", "ant_v0", "--store", str(store_root), "--sample", "6",
              "--out", str(tmp_path / "v")])
    assert r.returncode == 0, r.stderr
    rep = json.loads((tmp_path / "v" / "equivalence.json").read_text())
    assert rep["passed"] and rep["agreement"] == {"n": 6, "identical": 6, "rate": 1.0}
    assert len(rep["modes"]) == 3
    for mode in rep["modes"].values():
        assert mode["identical"] == mode["same_outcome"] == 6 and mode["max_abs_qpos_diff"] == 0.0
    h = rep["harness_vs_gymnasium_ant_v5"]
    assert h["identical"] == len(h["seeds"]) and h["max_abs_qpos_diff"] == 0.0


def test_verify_detects_a_tampered_record(tmp_path, small_sweep):
    """The gate can fail: a stored payload that differs from re-simulation is reported."""
    import shutil

    from policylab.fileio import arrays_to_bytes, atomic_write_bytes
    from policylab.hashing import sha256_hex

    store_root, _ = small_sweep
    copy = tmp_path / "store"
    shutil.copytree(store_root, copy)
    with Store(copy) as s:
        key = s.keys()[0]
        rec = s.get(key)
        p = s.payload(key)
        p["qpos"][50, 0] += 1e-12
        blob = arrays_to_bytes(p)
        atomic_write_bytes(copy / rec.payload_path, blob)
        data = dict(rec.data, payload_sha256=sha256_hex(blob))
        s._db.execute("UPDATE rollouts SET payload_sha256=?, record=? WHERE key=?",
                      (sha256_hex(blob), json.dumps(data), key))
    r = _run(["verify", "--checkpoint", "ant_v0", "--store", str(copy), "--sample", "64",
              "--out", str(tmp_path / "v")])
    assert r.returncode == 1
    rep = json.loads((tmp_path / "v" / "equivalence.json").read_text())
    assert not rep["passed"] and rep["agreement"]["identical"] == 63


def _assert_bad(args, field, tmp_path):
    before = sorted(p.name for p in tmp_path.iterdir())
    r = _run(args)
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"policylab: error: {field}:"), r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_bad_input_exits_2_and_writes_nothing(tmp_path):
    base = ["sweep", "--store", str(tmp_path / "s"), "--out", str(tmp_path / "o")]
    _assert_bad(base + ["--mu-range", "0.01,1.0"], "mu_range", tmp_path)
    _assert_bad(base + ["--mu-range", "0.05,2.5"], "mu_range", tmp_path)
    _assert_bad(base + ["--push-range", "10,301"], "push_range", tmp_path)
    _assert_bad(base + ["--push-range", "ten,20"], "push_range", tmp_path)
    _assert_bad(base + ["--checkpoint", "ant_v9"], "checkpoint", tmp_path)
    _assert_bad(base + ["--seeds-per-cell", "0"], "seeds_per_cell", tmp_path)
    _assert_bad(base + ["--executor", "dask"], "executor", tmp_path)
    _assert_bad(["verify", "--store", str(tmp_path / "nostore"), "--out", str(tmp_path / "o")], "store", tmp_path)


def test_resume_with_another_grid_is_refused(tmp_path, small_sweep):
    store_root, _ = small_sweep
    with Store(store_root) as s:
        before = s.fingerprint()
    r = _run(["sweep", "--checkpoint", "ant_v0", "--store", str(store_root), "--n-mu", "4", "--n-push", "4",
              "--seeds-per-cell", "5", "--out", str(tmp_path / "o")])
    assert r.returncode == 2 and r.stderr.startswith("policylab: error: grid:")
    assert not (tmp_path / "o").exists()
    with Store(store_root) as s:
        assert s.fingerprint() == before
