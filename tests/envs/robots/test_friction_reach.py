"""The friction axis must reach the robot's floor contacts, or a spec is refused (`Robot._check_friction_reach`,
the robot card's `contact_friction`).

MuJoCo gives a contact the friction of the geom with the higher `priority`, and only at equal priority the
larger of the two. The go1_imu spec copied with the floor's priority raised and only the feet listed as
friction geoms compiled and swept before, every friction row the same world (shown below in plain MuJoCo:
bitwise equal trajectories at mu 0.05 and 1.0)."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from policylab.envs.robots.robot import robot
from policylab.errors import BadInput
from policylab.studies.boundary.robot_card import contact_friction
from tests.support.boundary_fixtures import cli
from tests.support.robot_specs import go1_imu_copy

FEET = ["FL", "FR", "RL", "RR"]


def _go1_imu_copy(tmp_path, floor_priority: int, friction_geoms: list[str]):
    """go1_imu's spec with the floor's priority set in its scene and the friction geoms in the spec."""

    def raise_floor(text: str) -> str:
        assert text.count('<geom name="floor" ') == 1
        return text.replace('<geom name="floor" ', f'<geom name="floor" priority="{floor_priority}" ')

    spec = go1_imu_copy(tmp_path, raise_floor, friction_geoms=friction_geoms)
    return spec, spec.with_name("scene.xml")


def _trajectory(scene, mu: float, steps: int = 100) -> np.ndarray:
    """Plain MuJoCo: the go1_imu scene as the spec compiles its contacts (feet only, feet at priority 0),
    friction mu on the feet alone, the home pose held for `steps` physics steps with a sideways shove."""
    m = mujoco.MjModel.from_xml_path(str(scene))
    feet = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, g) for g in FEET]
    floor = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    m.geom_contype[:] = m.geom_conaffinity[:] = 0
    m.geom_contype[floor], m.geom_conaffinity[feet], m.geom_priority[feet] = 1, 1, 0
    m.geom_friction[feet, 0] = mu
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    d.ctrl[:] = d.qpos[7:]
    d.xfrc_applied[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "trunk"), 1] = 60.0
    qpos = []
    for _ in range(steps):
        mujoco.mj_step(m, d)
        qpos.append(d.qpos.copy())
    return np.array(qpos)


def test_a_floor_of_higher_priority_than_the_listed_feet_is_refused(tmp_path):
    spec, scene = _go1_imu_copy(tmp_path, floor_priority=1, friction_geoms=FEET)
    # what the spec would have swept: the feet's friction changes nothing at all
    assert np.array_equal(_trajectory(scene, 0.05), _trajectory(scene, 1.0))
    with pytest.raises(BadInput) as exc:
        robot(str(spec))
    assert exc.value.field == "robot" and "friction_geoms" in exc.value.message
    assert "'floor'" in exc.value.message and "higher priority" in exc.value.message
    for field, args in (
        ("spec", ("robot", spec, "--out", tmp_path / "card")),
        (
            "robot",
            (
                "sweep",
                "--robot",
                spec,
                "--checkpoint",
                "go1_v2",
                "--n-mu",
                1,
                "--n-push",
                1,
                "--seeds-per-cell",
                1,
                "--store",
                tmp_path / "store",
            ),
        ),
    ):
        r = cli(*args)
        assert r.returncode == 2
        (line,) = r.stderr.strip().splitlines()
        assert line.startswith(f"policylab: error: {field}: ") and "friction_geoms" in line
    assert not (tmp_path / "card").exists() and not (tmp_path / "store").exists()


def test_feet_alone_at_equal_priority_are_refused(tmp_path):
    """Equal priority: the larger friction wins, so the floor's 1.0 hides every mu below it."""
    spec, _ = _go1_imu_copy(tmp_path, floor_priority=0, friction_geoms=FEET)
    with pytest.raises(BadInput, match="larger friction of the two, and 'floor' \\(friction 1\\)"):
        robot(str(spec))


def test_listing_the_geom_whose_friction_governs_reaches_the_contacts(tmp_path):
    """The same raised floor listed as a friction geom: accepted, and the simulator's contacts take each mu."""
    spec, scene = _go1_imu_copy(tmp_path, floor_priority=1, friction_geoms=["floor"])
    rob = robot(str(spec))
    assert [tuple(p) for p in rob.floor_contacts(rob.base)] == [
        (mujoco.mj_name2id(rob.base, mujoco.mjtObj.mjOBJ_GEOM, g), 0) for g in FEET
    ]
    c = contact_friction(rob)
    assert c["contacts"] == 4 and c["friction"] == {"0.05": [0.05] * 4, "1": [1.0] * 4}


@pytest.mark.parametrize("name", ["go1_imu", "go1", "ant"])
def test_every_shipped_robots_contacts_follow_mu(name):
    c = contact_friction(robot(name))
    assert c["contacts"] >= 4 and c["friction"]["0.05"] == [0.05] * c["contacts"]
    assert c["friction"]["1"] == [1.0] * c["contacts"]
