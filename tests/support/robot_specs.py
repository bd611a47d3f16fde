"""Robots a test brings: a shipped robot's spec folder copied into a test's folder, to edit its spec or its MJCF
scene there, and a robot of the test's own (a four-legged crate: its MJCF and spec written into a folder)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from policylab.envs.robots.spec import SPECS_DIR


def go1_imu_copy(folder: Path, scene_edit=None, **changes) -> Path:
    """go1_imu's spec folder copied under `folder` (its meshes stay in the shipped go1 folder, linked beside
    it: go1_imu.xml reads them from ../go1/assets), its scene.xml text passed through `scene_edit`, its spec's
    top-level fields replaced by `changes`; the spec file's path."""
    specs = Path(folder) / "specs"
    shutil.copytree(SPECS_DIR / "go1_imu", specs / "go1_imu")
    (specs / "go1").symlink_to(SPECS_DIR / "go1")
    if scene_edit is not None:
        scene = specs / "go1_imu" / "scene.xml"
        scene.write_text(scene_edit(scene.read_text()))
    path = specs / "go1_imu" / "go1_imu.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))
    return path


CRATE_XML = """<mujoco model="crate">
  <option timestep="0.005"/>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 0.1"/>
    <body name="body" pos="0 0 0.26">
      <freejoint/>
      <geom name="box" type="box" size="0.2 0.1 0.05" mass="4"/>
      <body name="leg_fl" pos="0.15 0.1 -0.05"><joint name="fl" axis="0 1 0" range="-1 1" stiffness="60" damping="2"/>
        <geom name="foot_fl" type="capsule" fromto="0 0 0 0 0 -0.16" size="0.02" mass="0.2"/></body>
      <body name="leg_fr" pos="0.15 -0.1 -0.05"><joint name="fr" axis="0 1 0" range="-1 1" stiffness="60" damping="2"/>
        <geom name="foot_fr" type="capsule" fromto="0 0 0 0 0 -0.16" size="0.02" mass="0.2"/></body>
      <body name="leg_rl" pos="-0.15 0.1 -0.05"><joint name="rl" axis="0 1 0" range="-1 1" stiffness="60" damping="2"/>
        <geom name="foot_rl" type="capsule" fromto="0 0 0 0 0 -0.16" size="0.02" mass="0.2"/></body>
      <body name="leg_rr" pos="-0.15 -0.1 -0.05"><joint name="rr" axis="0 1 0" range="-1 1" stiffness="60" damping="2"/>
        <geom name="foot_rr" type="capsule" fromto="0 0 0 0 0 -0.16" size="0.02" mass="0.2"/></body>
    </body>
  </worldbody>
  <actuator>
    <motor joint="fl" ctrlrange="-1 1" gear="5"/><motor joint="fr" ctrlrange="-1 1" gear="5"/>
    <motor joint="rl" ctrlrange="-1 1" gear="5"/><motor joint="rr" ctrlrange="-1 1" gear="5"/>
  </actuator>
</mujoco>
"""

CRATE_SPEC = {
    "name": "crate",
    "mjcf": "crate.xml",
    "env": "test/crate",
    "torso_body": "body",
    "push_body": "body",
    "friction_geoms": "all",
    "control": {"mode": "torque", "force_limits": [5.0, 5.0, 5.0, 5.0]},
    "physics_dt": 0.005,
    "control_dt": 0.025,
    "reset": {"qpos_uniform": 0.02, "qpos_noise_on": "joints", "qvel_normal": 0.05},
    "observation": [
        {"term": "gravity_body"},
        {"term": "angvel_body"},
        {"term": "joint_pos_rel"},
        {"term": "joint_vel", "scale": 0.1},
    ],
    "failure": {"torso_z_fail_m": 0.12, "uprightness_fail": 0.5, "rule_version": 1},
    "stop_at_failure": True,
    "render": {"camera_distance": 1.2},
}


def write_crate(folder: Path, **changes) -> Path:
    """The crate's MJCF and spec (`changes` replace top-level fields) written into `folder`; the spec file's path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "crate.xml").write_text(CRATE_XML)
    path = folder / "crate.json"
    path.write_text(json.dumps({**CRATE_SPEC, **changes}))
    return path
