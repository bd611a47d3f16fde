"""Robots are spec files: the Ant spec steps as Gymnasium's Ant-v5 does, bit for bit, the Go1 spec loads the
shipped Menagerie model in the original's configuration, a user's MJCF plus a spec runs the whole
pipeline, and bad robot files are refused before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import mujoco
import numpy as np
import pytest

from policylab.envs.robots.batch import RobotBatch, plain_loop, run_closed_loop
from policylab.envs.robots.robot import robot
from policylab.envs.robots.spec import DEFAULT_ROBOT
from policylab.errors import BadInput
from policylab.policies import linear
from policylab.rollout.store import Store
from policylab.studies.boundary import protocol
from policylab.studies.boundary.checkpoint import resolve_checkpoint
from tests.support.boundary_fixtures import cli
from tests.support.robot_specs import CRATE_SPEC, write_crate


def test_ant_spec_is_gymnasiums_ant_v5():
    rob = robot("ant")
    assert (rob.obs_dim, rob.act_dim, rob.control_dt, rob.frame_skip) == (27, 8, 0.05, 5)
    assert rob.spec.env == "gymnasium-mujoco/Ant-v5" and rob.mjcf.name == "ant.xml"


def test_batch_and_threads_do_not_change_a_world():
    rob = robot("ant")
    policy = linear.load(resolve_checkpoint("ant_v0").path, rob.obs_dim, rob.act_dim)
    seeds = [5, 6, 7, 8, 9]
    mus = [0.3, 1.0, 0.05, 0.6, 1.0]
    kw = dict(n_steps=60, force_n=np.full(5, 12.0), dir_deg=np.full(5, 90.0), push_k0=np.full(5, 20), n_push=10)
    a = run_closed_loop(rob, policy.act, mus, seeds, nthread=2, **kw)
    b = run_closed_loop(rob, policy.act, mus[::-1], seeds[::-1], nthread=1, **{**kw, "force_n": kw["force_n"][::-1]})
    single = run_closed_loop(
        rob,
        policy.act,
        mus[2:3],
        seeds[2:3],
        nthread=1,
        **{**kw, "force_n": kw["force_n"][:1], "dir_deg": kw["dir_deg"][:1], "push_k0": kw["push_k0"][:1]},
    )
    for k in a:
        np.testing.assert_array_equal(a[k], b[k][::-1])
        np.testing.assert_array_equal(a[k][2], single[k][0])


def _plain_mj_step(rob, mus, seeds, ctrl, push, n_steps):
    """The per-world loop RobotBatch replaces: one persistent MjData per world, mj_step(nstep=frame_skip)."""
    out = []
    for w, (mu, seed) in enumerate(zip(mus, seeds)):
        m = rob.model(mu)
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:] = rob.reset_state(seed)
        mujoco.mj_forward(m, d)
        rows = [np.concatenate([[d.time], d.qpos, d.qvel])]
        for k in range(n_steps):
            d.ctrl[:] = ctrl[k, w]
            d.xfrc_applied[rob.push_body, :2] = push[k, w]
            mujoco.mj_step(m, d, nstep=rob.frame_skip)
            rows.append(np.concatenate([[d.time], d.qpos, d.qvel]))
        out.append(np.array(rows))
    return np.array(out)


@pytest.mark.parametrize("nthread", [1, 2, 3])
def test_ant_batch_equals_a_persistent_mjdata_per_world(nthread):
    """RobotBatch (a mujoco.batch.Batch of state rows) is bitwise the per-world MjData loop, blow-ups included:
    world 2 is pushed with 1e12 N, MuJoCo resets it (clock rewound), and it goes on from the reset."""
    rob = robot("ant")
    mus, seeds, n_steps = [1.0, 0.3, None, 0.05], [5, 6, 7, 8], 40
    rng = np.random.default_rng(0)
    ctrl = rng.uniform(-1, 1, size=(n_steps, 4, rob.act_dim))
    push = np.zeros((n_steps, 4, 2))
    push[10:15, 1, 0], push[10:15, 2, 0] = 15.0, 1e12
    want = _plain_mj_step(rob, mus, seeds, ctrl, push, n_steps)
    with RobotBatch(rob, mus, seeds, nthread=nthread) as batch:
        rows = [np.concatenate([batch.time[:, None], batch.qpos, batch.qvel], axis=1)]
        for k in range(n_steps):
            batch.step(ctrl[k], push[k])
            rows.append(np.concatenate([batch.time[:, None], batch.qpos, batch.qvel], axis=1))
    got = np.stack(rows, axis=1)
    assert want[2, 11, 0] < want[2, 10, 0]  # the blow-up really rewound world 2's clock
    np.testing.assert_array_equal(got, want)


def test_a_robot_is_resolved_once_and_travels_as_its_reference(tmp_path):
    import pickle

    ant = robot("ant")
    assert ant is robot("ant") and ant.ref == "ant" and pickle.loads(pickle.dumps(ant)) is ant
    assert robot(None).ref == DEFAULT_ROBOT
    user = robot(write_crate(tmp_path / "robot"))
    assert user.ref == str((tmp_path / "robot" / "crate.json").resolve())
    assert pickle.loads(pickle.dumps(user)) is user


def test_go1_spec_is_the_original_configuration():
    rob = robot("go1")
    m = rob.base
    assert (m.nq, m.nv, m.nu, rob.obs_dim, rob.act_dim) == (19, 18, 12, 36, 12)
    assert m.opt.timestep == 0.004 and rob.frame_skip == 5 and m.opt.iterations == 1 and m.opt.ls_iterations == 5
    assert m.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    colliding = {
        mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g)
        for g in range(m.ngeom)
        if m.geom_contype[g] or m.geom_conaffinity[g]
    }
    assert colliding == {"floor", "FL", "FR", "RL", "RR"}  # feet-only contacts
    assert np.allclose(m.actuator_gainprm[:, 0], 35.0) and np.allclose(m.actuator_biasprm[:, 1:3], [-35.0, -0.5])
    assert np.isclose(rob.body_weight_n(), 12.743448 * 9.81)
    assert rob.nominal_qpos[2] == 0.27 and list(rob.nominal_joints[:3]) == [0.0, 0.9, -1.8]
    spec_dir = Path(rob.spec_file).parent
    assert "BSD 3-Clause" in (spec_dir / "LICENSE").read_text()
    assert sorted(p.name for p in (spec_dir / "assets").glob("*.stl")) == [
        "calf.stl",
        "hip.stl",
        "thigh.stl",
        "thigh_mirror.stl",
        "trunk.stl",
    ]


@pytest.mark.parametrize("name", ["go1", "ant"])
def test_batch_equals_a_plain_per_world_loop(name):
    """Each world of a batch (own friction, push, early stop) equals a plain MjData loop bitwise."""
    rob = robot(name)
    rng = np.random.default_rng(3)
    policy = linear.LinearPolicy(
        0.05 * rng.standard_normal((rob.act_dim, rob.obs_dim)), np.zeros(rob.obs_dim), np.ones(rob.obs_dim)
    )
    mus, seeds = [0.3, None, 0.8], [5, 6, 7]
    force = np.array([0.0, 0.5, 1.5]) * rob.body_weight_n()
    n, k0, n_push = protocol.n_steps(rob), int(round(2.0 / rob.control_dt)), protocol.push_steps(rob)
    batch = run_closed_loop(
        rob,
        policy.act,
        mus,
        seeds,
        n_steps=n,
        force_n=force,
        dir_deg=np.full(3, 90.0),
        push_k0=np.full(3, k0),
        n_push=n_push,
    )
    for i in range(3):
        ref = plain_loop(
            rob, policy.act, mus[i], seeds[i], n_steps=n, force_n=force[i], dir_deg=90.0, push_k0=k0, n_push=n_push
        )
        m = int(batch["n_states"][i])
        assert len(ref["qpos"]) == m
        assert ref["qpos"].tobytes() == batch["qpos"][i, :m].tobytes()
    if rob.spec.stop_at_failure:
        assert batch["n_states"][2] < n + 1  # the hard push toppled it: the record ends at the fall


def test_user_robot_runs_the_whole_pipeline(tmp_path):
    """An MJCF written here (not shipped) plus its spec: sweep, verify, reduce, select, replay, clips, rrd,
    report, all through the CLI with --robot PATH."""
    spec = write_crate(tmp_path / "robot")
    rob = robot(spec)
    ckpt = tmp_path / "crate_zero.npz"
    linear.save(ckpt, linear.LinearPolicy(np.zeros((4, rob.obs_dim)), np.zeros(rob.obs_dim), np.ones(rob.obs_dim)))
    store, ana = tmp_path / "store", tmp_path / "ana"
    grid = [
        "--n-mu",
        2,
        "--mu-min",
        0.2,
        "--mu-max",
        1.0,
        "--n-push",
        3,
        "--push-min",
        170,
        "--push-max",
        200,
        "--seeds-per-cell",
        4,
    ]  # the crate topples between 170 and 200 %BW at mu 0.2 (and by 45 %BW at 1.0)
    steps = [
        ("sweep", "--robot", spec, "--checkpoint", ckpt, *grid, "--store", store, "--out", tmp_path / "sw"),
        ("verify", "--robot", spec, "--checkpoint", ckpt, "--store", store, "--sample", 6, "--out", tmp_path / "v"),
        ("reduce", "--store", store, "--checkpoint", "crate_zero", "--out", ana),
        ("select", "--out", ana),
        ("replay", "--out", ana, "--checkpoint", ckpt),
        ("clips", "--out", ana, "--width", 64, "--height", 48),
        ("rrd", "--out", ana),
        ("report", "--out", ana),
    ]
    for args in steps:
        res = cli(*args)
        assert res.returncode == 0, (args[0], res.stderr)
    v = json.loads((tmp_path / "v" / "equivalence.json").read_text())
    assert v["passed"] and v["harness_vs_plain_loop"]["identical"] == 2
    red = json.loads((ana / "reduce.json").read_text())
    assert red["sweep"]["env"] == "test/crate" and red["rule_check"]["disagree"] == 0
    assert red["thresholds"]["torso_z_fail_m"] == 0.12
    html = (ana / "report" / "report.html").read_text()
    assert "Per-cell counts" in html and "Rerun recordings" in html
    rrds = json.loads((ana / "rrd" / "rrd.json").read_text())
    assert rrds and all(f'href="../rrd/{r["rrd_file"]}"' in html for r in rrds)
    clips = json.loads((ana / "clips" / "clips.json").read_text())
    assert any(c["push_frames"] > 0 for c in clips)  # the push arrow is drawn while the push acts
    assert all(c["consistent"] for c in clips)  # a record that ends at its failure shows that failure
    timing = json.loads((ana / "clips" / "timing.json").read_text())
    assert timing["clips"] == len({c["key"] for c in clips})
    with Store(store) as s:
        recs = list(s.records("boundary"))
        assert len(recs) == 24
        for r in recs:  # records of failed rollouts end at the failure (stop_at_failure)
            p = s.payload(r.key)
            if r.outcome["status"] == "failed":
                assert len(p["time"]) - 1 == round(r.outcome["t_fail"] / rob.control_dt)
            else:
                assert len(p["time"]) == 201
        assert {r.outcome["status"] for r in recs} == {"failed", "survived"}


BAD_SPECS = {
    "not_json": ("{name: crate", "is not JSON"),
    "missing": ({k: v for k, v in CRATE_SPEC.items() if k != "torso_body"}, "torso_body: Field required"),
    "unknown_body": ({**CRATE_SPEC, "push_body": "nose"}, "the model has no body named 'nose'"),
    "no_free_joint": ({**CRATE_SPEC, "torso_body": "leg_fl"}, "needs a free joint"),
    "bad_dt": ({**CRATE_SPEC, "control_dt": 0.012}, "must be a whole multiple of physics_dt"),
    "no_mjcf": ({**CRATE_SPEC, "mjcf": "gone.xml"}, "gone.xml not found"),
    "bad_geom": ({**CRATE_SPEC, "friction_geoms": ["floor", "wheel"]}, "no geom named 'wheel'"),
    "limits": ({**CRATE_SPEC, "control": {**CRATE_SPEC["control"], "force_limits": [5.0]}}, "has 1 values"),
    "nan": ({**CRATE_SPEC, "physics_dt": float("nan")}, "physics_dt: Input should be a finite number"),
}


@pytest.mark.parametrize("case", sorted(BAD_SPECS))
def test_bad_robot_files_are_refused_before_anything_is_written(tmp_path, case):
    content, words = BAD_SPECS[case]
    folder = tmp_path / "robot"
    write_crate(folder)
    path = folder / "bad.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    res = cli("sweep", "--robot", path, "--store", tmp_path / "store", "--out", tmp_path / "out")
    assert res.returncode == 2, res.stderr
    line = res.stderr.strip()
    assert line.startswith("policylab: error: robot: ") and "\n" not in line and words in line, line
    assert not (tmp_path / "store").exists() and not (tmp_path / "out").exists()
    with pytest.raises(BadInput):
        robot(path)


def test_unknown_robot_name_and_a_checkpoint_of_another_robot(tmp_path):
    res = cli("sweep", "--robot", "spot", "--store", tmp_path / "s", "--out", tmp_path / "o")
    assert res.returncode == 2 and "unknown robot 'spot'; expected one of ant, go1" in res.stderr
    res = cli("sweep", "--robot", "go1", "--checkpoint", "ant_v0", "--store", tmp_path / "s", "--out", tmp_path / "o")
    assert res.returncode == 2 and res.stderr.startswith("policylab: error: checkpoint: ")
    assert "the go1 robot's linear policy needs float (12, 36)" in res.stderr
    assert not (tmp_path / "s").exists() and not (tmp_path / "o").exists()
