"""`policylab boundary sweep --command`: a sweep sets the command vector of the robot's command term.

The command is part of the protocol (so of the rollout keys) and of the store's meta, and every later
stage that rebuilds the robot uses it: verify and replay re-simulate a commanded sweep bitwise. The
policy (tests/support/trainer_layout.py, linear) leans its hips toward the commanded vx, so a stage
that fell back on the spec's command would re-simulate other trajectories."""

from __future__ import annotations

import json
import pickle

import numpy as np

from policylab.envs.robots.robot import commanded_robot, robot
from policylab.rollout.store import Store
from policylab.studies.boundary.protocol import protocol
from policylab.studies.boundary.records import meta_name, stored_robot
from tests.support.boundary_fixtures import cli
from tests.support.trainer_layout import linear_policy

# Commanded backward (vx -2), the leaner falls in a quarter of the unpushed and 10 %BW worlds: mixed
# cells, which give select and replay worlds to re-simulate.
BACKWARD = "-2,0,0"
GRID = [
    "--n-mu",
    1,
    "--mu-min",
    1.0,
    "--mu-max",
    1.0,
    "--n-push",
    2,
    "--push-min",
    0,
    "--push-max",
    10,
    "--seeds-per-cell",
    4,
]


def _sweep(tmp_path, policy, store, command, *options):
    return cli(
        "sweep",
        "--robot",
        "go1_imu",
        "--checkpoint",
        policy,
        *GRID,
        "--command",
        command,
        *options,
        "--store",
        store,
        "--out",
        tmp_path / f"{store.name}-sweep",
    )


def _records(store):
    """{rollout key: (the world's cache key, stored qpos)} of a store's records."""
    with Store(store) as s:
        return {r.key: (r.data["world"]["cache_key"], s.payload(r.key)["qpos"]) for r in s.records("boundary")}


def _refused(r, contains):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("policylab: error: command: ") and contains in lines[0], r.stderr


def test_commanded_sweep_verifies_and_replays_bitwise_under_its_own_keys(tmp_path):
    policy = linear_policy(tmp_path / "policy" / "leaner.npz")
    back, fwd, ana = tmp_path / "back", tmp_path / "fwd", tmp_path / "ana"
    r = _sweep(tmp_path, policy, back, BACKWARD)
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / "back-sweep" / "sweep.json").read_text())
    assert summary["protocol"]["command"] == [-2.0, 0.0, 0.0] and summary["counts"]["missing"] == 0
    assert summary["counts"]["survived"] > 0 and summary["counts"]["failed"] > 0
    with Store(back) as s:
        assert s.get_meta(meta_name("leaner"))["protocol"]["command"] == [-2.0, 0.0, 0.0]
        assert stored_robot(s, "leaner").spec.command == [-2.0, 0.0, 0.0]

    r = cli(
        "verify",
        "--robot",
        "go1_imu",
        "--checkpoint",
        policy,
        "--store",
        back,
        "--sample",
        4,
        "--out",
        tmp_path / "verify",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    eq = json.loads((tmp_path / "verify" / "equivalence.json").read_text())
    assert eq["passed"] and eq["agreement"] == {"n": 4, "identical": 4, "rate": 1.0}
    for args in (
        ("reduce", "--store", back, "--checkpoint", "leaner", "--out", ana),
        ("select", "--out", ana, "--n-boundary", 2, "--n-recoveries", 1),
        ("replay", "--out", ana),
    ):  # re-simulated with the store's copy of the policy
        r = cli(*args)
        assert r.returncode == 0, (args[0], r.stdout, r.stderr)
    eqs = json.loads((ana / "replay" / "replays.json").read_text())["equivalence_summary"]
    assert eqs["checked"] >= 2 and eqs["bitwise_equal"] == eqs["checked"], eqs

    # another command into the same store is refused, and nothing is written there
    stored = _records(back)
    _refused(_sweep(tmp_path, policy, back, "0.5,0,0"), "another --store")
    assert _records(back).keys() == stored.keys()

    # in a store of its own it is another rollout: other keys, other trajectories; swept by worker
    # processes, which get the robot pickled (its command with it, or verify would fail)
    r = _sweep(tmp_path, policy, fwd, "0.5,0,0", "--executor", "processes", "--workers", 2, "--chunk", 4)
    assert r.returncode == 0, r.stderr
    r = cli(
        "verify",
        "--robot",
        "go1_imu",
        "--checkpoint",
        policy,
        "--store",
        fwd,
        "--sample",
        2,
        "--out",
        tmp_path / "verify-fwd",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    other = _records(fwd)
    assert len(other) == len(stored) == 8 and not other.keys() & stored.keys()
    by_world = dict(stored.values())
    assert sorted(by_world) == sorted(w for w, _ in other.values())  # the same worlds, played otherwise
    assert all(not np.array_equal(q, by_world[w]) for w, q in other.values())


def test_bad_commands_are_refused_before_anything_is_written(tmp_path):
    policy = linear_policy(tmp_path / "policy" / "leaner.npz")
    for value, says in (
        ("0.5,0", "takes 3 values, got 2"),
        ("0.5,nan,0", "finite"),
        ("inf,0,0", "finite"),
        ("fast,0,0", "comma-separated numbers"),
        ("", "comma-separated numbers"),
    ):
        _refused(_sweep(tmp_path, policy, tmp_path / "store", value), says)
    r = cli(
        "sweep",
        "--robot",
        "go1",
        "--checkpoint",
        "go1_v0",
        "--command",
        "0.5,0,0",
        *GRID,
        "--store",
        tmp_path / "store",
        "--out",
        tmp_path / "out",
    )
    _refused(r, "has no command term")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["policy"]


def test_a_commanded_robot_travels_to_workers_with_its_command():
    """Worker processes get the robot pickled: the command must travel with it, and a robot without
    --command keeps the protocol (and keys) it always had."""
    base = robot("go1_imu")
    rob = commanded_robot(base, [0.25, -0.5, 1.0])
    back = pickle.loads(pickle.dumps(rob))
    assert back.spec.command == [0.25, -0.5, 1.0] and protocol(back) == protocol(rob)
    assert protocol(rob) == {**protocol(base), "command": [0.25, -0.5, 1.0]}
    assert pickle.loads(pickle.dumps(base)) is base and base.spec.command == [0.0, 0.0, 0.0]
