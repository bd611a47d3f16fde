"""A small sweep end to end; interrupted sweeps resume to the identical store; executors agree."""

import re
import signal
import sqlite3
import subprocess
import sys

import mujoco
import numpy as np
import pytest

from policylab.envs.robots.robot import robot
from policylab.rollout.store import Store
from policylab.studies.boundary import failure, sweep
from policylab.studies.boundary.world import Grid
from tests.support import signal_at
from tests.support.paths import ROOT

_ANT = mujoco.MjModel.from_xml_path(str(robot("ant").mjcf))
BODY_WEIGHT_N = float(_ANT.body_mass.sum() * np.linalg.norm(_ANT.opt.gravity))

CLI = [
    sys.executable,
    "-m",
    "policylab.cli",
    "boundary",
    "sweep",
    "--checkpoint",
    "ant_v0",
    "--n-mu",
    "4",
    "--n-push",
    "4",
    "--seeds-per-cell",
    "4",
    "--chunk",
    "4",
]


def test_small_sweep_records(small_sweep, small_grid):
    store_root, summary = small_sweep
    assert summary["complete"] and summary["counts"]["missing"] == 0
    c = summary["counts"]
    assert c["survived"] + c["failed"] + c["diverged"] == 64
    with Store(store_root) as store:
        for rec in store.records("boundary"):
            out = rec.outcome
            p = store.payload(rec.key)  # verifies the payload sha256
            assert p["qpos"].shape == (101, 15) and p["qvel"].shape == (101, 14) and p["ctrl"].shape == (100, 8)
            np.testing.assert_array_equal(p["torso_z"], p["qpos"][:, 2])
            assert failure.classify(p["qpos"], p["qvel"], p["time"], 0.05) == out
            assert np.count_nonzero(np.abs(p["push"]).sum(axis=1)) == 10  # steps 40..49
            assert np.all(p["push"][:40] == 0) and np.all(p["push"][50:] == 0)
            force = np.hypot(*p["push"][45])
            # push_pct % of body weight: the Ant's total mass (0.91088 kg) times |g| (9.81), from ant.xml itself
            assert np.isclose(force, rec.data["world"]["push_pct"] / 100 * BODY_WEIGHT_N, rtol=1e-6)
            if out["status"] == "failed":
                assert 0 < out["t_fail"] <= 5.0
            if out["status"] == "survived":
                assert out["t_fail"] is None
                assert out["min_torso_z"] >= failure.TORSO_Z_FAIL_M
                assert out["min_uprightness"] >= failure.UPRIGHTNESS_FAIL


def test_stopped_after_k_chunks_resumes_to_identical_store(tmp_path, small_sweep, small_grid, v0):
    store_root, _ = small_sweep
    partial = sweep.run_sweep(small_grid, v0, tmp_path / "store", tmp_path / "out1", chunk=10, max_chunks=2)
    assert partial["counts"]["missing"] == 64 - 20
    done = sweep.run_sweep(small_grid, v0, tmp_path / "store", tmp_path / "out2", chunk=7)
    assert done["timing"]["rollouts_run"] == 44
    with Store(store_root) as a, Store(tmp_path / "store") as b:
        assert a.fingerprint() == b.fingerprint()
    assert done["store_fingerprint"] == small_sweep[1]["store_fingerprint"]


def _count(db):
    try:
        with sqlite3.connect(db) as con:
            return con.execute("SELECT COUNT(*) FROM rollouts").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_killed_process_resumes_to_identical_store(tmp_path, small_sweep):
    """The driver is killed (SIGKILL) right after it commits its first unit, by the command itself
    (`tests.support.signal_at`): a kill timed from outside missed a sweep that had already ended (it runs
    in a fraction of a second) on a loaded machine."""
    store_root, _ = small_sweep
    store = tmp_path / "store"
    # worker processes write their units and the driver commits each as it comes; the workers die with
    # the driver, and a unit one wrote but the driver had not committed is left as its file
    args = ["--store", str(store), "--executor", "processes", "--workers", "2"]
    proc = subprocess.run(
        signal_at.argv(
            ["policylab.rollout.store:Store.commit_unit,after,SIGKILL"],
            [*CLI[3:], *args, "--out", str(tmp_path / "o1")],
        ),
        cwd=ROOT,
        env=signal_at.env(),
        capture_output=True,
        timeout=300,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    killed_at = _count(store / "index.sqlite")
    assert 0 < killed_at < 64, killed_at  # really interrupted part way
    done = subprocess.run(CLI + args + ["--out", str(tmp_path / "o2")], check=True, capture_output=True, text=True)
    headline, last = done.stdout.strip().splitlines()
    # a unit a worker wrote before the kill but the driver had not committed is committed from its file
    adopted = re.search(r"\((\d+)\s+committed\s+from\s+unit\s+files", done.stderr)
    ran = 64 - killed_at - (int(adopted.group(1)) if adopted else 0)
    assert headline.startswith("ant_v0: survived ") and f"{ran} run in" in headline
    assert last == f"report: {tmp_path / 'o2' / 'sweep.json'}"
    with Store(store_root) as a, Store(store) as b:
        assert a.fingerprint() == b.fingerprint()
        for key in a.keys():
            assert a.get(key).data == b.get(key).data


@pytest.mark.usefixtures("one_local_ray")
def test_ray_and_processes_executors_write_the_same_records(tmp_path, v0):
    grid = Grid.build((0.3, 1.0), 2, (50, 150), 2, 2)
    fps = []
    for ex in ("local", "processes", "ray"):
        sweep.run_sweep(grid, v0, tmp_path / ex, tmp_path / f"out-{ex}", executor=ex, chunk=3, workers=2)
        with Store(tmp_path / ex) as s:
            fps.append(s.fingerprint())
    assert len(fps[0]) == 8 and fps[0] == fps[1] == fps[2]
