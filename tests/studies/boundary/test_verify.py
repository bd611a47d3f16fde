"""Equivalence gate (100% bitwise on CPU MuJoCo) through the CLI: a passing gate exits 0, a failing one
exits 1 with its headline; a store that is not one, or holds another grid, is refused (exit 2)."""

import json
import shutil

from policylab.fileio import atomic_write_bytes
from policylab.rollout.migrations import moved_record
from policylab.rollout.payloads import pack_arrays
from policylab.rollout.store import Store
from tests.support.boundary_fixtures import cli


def test_equivalence_gate_is_bitwise(tmp_path, small_sweep):
    store_root, _ = small_sweep
    r = cli("verify", "--checkpoint", "ant_v0", "--store", store_root, "--sample", "6", "--out", tmp_path / "v")
    assert r.returncode == 0, r.stderr
    assert r.report == tmp_path / "v" / "equivalence.json"
    assert r.stdout.splitlines()[0] == (
        "equivalence ant_v0: 6/6 identical (100%); Gymnasium Ant-v5 loop 2/2 identical; gate PASS"
    )
    rep = json.loads((tmp_path / "v" / "equivalence.json").read_text())
    assert rep["passed"] and rep["agreement"] == {"n": 6, "identical": 6, "rate": 1.0}
    assert len(rep["modes"]) == 3
    for mode in rep["modes"].values():
        assert mode["identical"] == mode["same_outcome"] == 6 and mode["max_abs_qpos_diff"] == 0.0
    h = rep["harness_vs_gymnasium_ant_v5"]
    assert h["identical"] == len(h["seeds"]) and h["max_abs_qpos_diff"] == 0.0


def test_verify_detects_a_tampered_record(tmp_path, small_sweep):
    """The gate can fail: a stored payload that differs from re-simulation is reported, exit status 1."""
    store_root, _ = small_sweep
    copy = tmp_path / "store"
    _tampered_copy(store_root, copy)
    r = cli("verify", "--checkpoint", "ant_v0", "--store", copy, "--sample", "64", "--out", tmp_path / "v")
    assert r.returncode == 1, r.stderr
    assert "error" not in r.stderr  # a failed gate is a result, not an error
    headline, last = r.stdout.strip().splitlines()
    assert headline.startswith("equivalence ant_v0: 63/64 identical") and headline.endswith("gate FAIL")
    assert last == f"report: {tmp_path / 'v' / 'equivalence.json'}"
    rep = json.loads((tmp_path / "v" / "equivalence.json").read_text())
    assert not rep["passed"] and rep["agreement"]["identical"] == 63


def test_verify_needs_a_sweep_of_the_checkpoint(tmp_path, small_sweep):
    store_root, _ = small_sweep
    r = cli("verify", "--checkpoint", "ant_v1", "--store", store_root, "--out", tmp_path / "v")
    assert r.returncode == 2
    assert r.stderr.strip() == (
        f"policylab: error: store: {store_root} holds no sweep of ant_v1; run `policylab "
        "boundary sweep --checkpoint ant_v1` first"
    )
    assert not (tmp_path / "v").exists()


def test_resume_with_another_grid_is_refused(tmp_path, small_sweep):
    store_root, _ = small_sweep
    with Store(store_root) as s:
        before = s.fingerprint()
    r = cli(
        "sweep",
        "--checkpoint",
        "ant_v0",
        "--store",
        store_root,
        "--n-mu",
        "4",
        "--n-push",
        "4",
        "--seeds-per-cell",
        "5",
        "--out",
        tmp_path / "o",
    )
    assert r.returncode == 2 and r.stderr.startswith("policylab: error: grid:")
    assert not (tmp_path / "o").exists()
    with Store(store_root) as s:
        assert s.fingerprint() == before


def test_verify_names_a_cross_machine_difference(tmp_path, small_sweep):
    """A mismatching record whose provenance names other CPU features than this machine's is reported
    as a cross-machine difference, on one line of its own (a changed payload stands in for another
    CPU's arithmetic)."""
    store_root, _ = small_sweep
    copy = tmp_path / "store"
    other = {"machine": "x86_64", "features": "SSE2", "npy_disabled": ""}  # no x86-64 CPU this runs on has only SSE2
    data = _tampered_copy(store_root, copy, cpu=other)
    r = cli("verify", "--checkpoint", "ant_v0", "--store", copy, "--sample", "64", "--out", tmp_path / "v")
    assert r.returncode == 1, r.stderr
    headline, cross, _ = r.stdout.strip().splitlines()
    assert headline.endswith("gate FAIL")
    assert cross.startswith(
        "cross-machine difference: 1 mismatching record(s) were made on a CPU with other "
        "features (x86_64 SSE2) than this one ("
    )
    rep = json.loads((tmp_path / "v" / "equivalence.json").read_text())
    assert rep["cross_machine"]["mismatches_recorded_on_other_cpus"] == {data["world"]["cache_key"]: other}


def _tampered_copy(store_root, copy, cpu=None) -> dict:
    """Copy the store and move one stored qpos by 1e-12 (its sha256 updated, so only a re-simulation
    can tell); `cpu` rewrites the record's provenance as if another CPU had made it. Returns the record."""
    shutil.copytree(store_root, copy)
    with Store(copy) as s:
        key = s.keys()[0]
        rec = s.get(key)
        p = s.payload(key)
        p["qpos"][50, 0] += 1e-12
        blob, digest = pack_arrays(p)
        atomic_write_bytes(copy / "units" / "tampered.pack", blob)
        s.move_payloads([(key, "units/tampered.pack", moved_record(rec, digest), digest, 0, len(blob))])
        data = s.require(key).data
        if cpu is not None:
            data["provenance"] = {**rec.data["provenance"], "cpu": cpu}
        s._db.execute("UPDATE rollouts SET record=? WHERE key=?", (json.dumps(data), key))
    return data
