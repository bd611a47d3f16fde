"""A policy in the common MJX/Isaac trainers' Go1 joystick layout, made here, and its robot spec.

`spec_file` writes a spec that declares the trainers' 48-value observation (velocimeter and gyro
sensors at the imu site, gravity in the imu frame, joint angles minus home, joint velocities, the
previous action, the velocity command) on the shipped go1_imu model, with actions through the MJCF's
position actuators (ctrl = home + 0.5 * action). `export_policy` behaviour-clones a small torch
actor-critic MLP toward a damping stand-still controller (a = -0.05 * joint velocity), a few hundred
Adam steps on seeded random observations, and exports it as the trainers do: torch's exporter with
a fixed batch of 1, an `obs` input and two outputs (`continuous_actions` and the critic's `value`),
so the spec must name the action output. It need not walk; it stands, and falls when pushed hard.
`linear_policy` writes the same damping controller as a linear .npz (no torch: fast), plus a lean of
the hips toward the command, so a rollout depends on the command it is given.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from policylab.envs.robots.spec import SPECS_DIR

OBS, ACT = 48, 12
JOINT_VEL = slice(21, 33)  # joint velocities' place in the observation (3 + 3 + 3 + 12 before them)
COMMAND = slice(45, 48)  # the command's (vx, vy, yaw rate) place: last


def spec_dict(**changes) -> dict:
    """The trainer-layout spec as a dict (`changes` replace top-level fields)."""
    spec = {
        "name": "go1_trained_elsewhere",
        "mjcf": str(SPECS_DIR / "go1_imu" / "scene.xml"),
        "env": "test/go1-joystick",
        "torso_body": "trunk",
        "push_body": "trunk",
        "friction_geoms": ["FL", "FR", "RL", "RR", "floor"],
        "keyframe": "home",
        "model": {
            "iterations": 1,
            "ls_iterations": 5,
            "integrator": "euler",
            "cone": "elliptic",
            "impratio": 1.0,
            "eulerdamp": False,
            "contact_geoms": ["FL", "FR", "RL", "RR"],
            "floor_geom": "floor",
        },
        "control": {"mode": "position", "action_scale": 0.5, "action_clip": None},
        "physics_dt": 0.004,
        "control_dt": 0.02,
        "reset": {"qpos_uniform": 0.05, "qpos_noise_on": "joints", "qvel_normal": 0.1},
        "observation": [
            {"term": "sensor", "name": "local_linvel"},
            {"term": "sensor", "name": "gyro"},
            {"term": "site_gravity", "name": "imu"},
            {"term": "joint_pos_rel"},
            {"term": "joint_vel"},
            {"term": "last_action"},
            {"term": "command", "value": [0.5, 0.0, 0.0]},
        ],
        "policy_output": "continuous_actions",
        "failure": {"torso_z_fail_m": 0.15, "uprightness_fail": 0.5, "rule_version": 1},
        "stop_at_failure": True,
        "render": {"camera_distance": 1.6, "geom_groups": [0, 1, 3]},
    }
    spec.update(changes)
    return spec


def spec_file(folder: Path, **changes) -> Path:
    path = Path(folder) / "go1_trained_elsewhere.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(spec_dict(**changes), indent=1))
    return path


def export_policy(path: Path, steps: int = 300) -> Path:
    """Behaviour-clone the actor-critic toward a = -0.05 * joint velocity and export it as the trainers do
    (docs/boundary.md's recipe: torch.onnx.export with dynamo=False, a fixed batch of 1)."""
    import torch

    torch.manual_seed(0)

    class ActorCritic(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.actor = torch.nn.Sequential(
                torch.nn.Linear(OBS, 64), torch.nn.ELU(), torch.nn.Linear(64, ACT), torch.nn.Tanh()
            )
            self.critic = torch.nn.Linear(OBS, 1)

        def forward(self, obs):
            return self.actor(obs), self.critic(obs)

    net = ActorCritic()
    opt = torch.optim.Adam(net.actor.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(1)
    for _ in range(steps):
        obs = torch.randn(256, OBS, generator=gen)
        target = -0.05 * obs[:, JOINT_VEL]
        loss = torch.mean((net.actor(obs) - target) ** 2)
        opt.zero_grad()
        loss.backward()
        opt.step()
    path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():  # the legacy exporter is chosen on purpose (no onnxscript needed)
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(
            net,
            (torch.zeros(1, OBS),),
            str(path),
            dynamo=False,
            input_names=["obs"],
            output_names=["continuous_actions", "value"],
            opset_version=11,
        )
    return path


def linear_policy(path: Path, command_gain: float = 0.2) -> Path:
    """A linear policy (`policylab.policies.linear`) in the trainers' layout: a = -0.05 * joint velocity,
    plus `command_gain` * vx on every thigh joint (actions 1, 4, 7, 10), so the command moves the robot."""
    import numpy as np

    from policylab.policies import linear

    w = np.zeros((ACT, OBS))
    w[np.arange(ACT), np.arange(JOINT_VEL.start, JOINT_VEL.stop)] = -0.05
    w[[1, 4, 7, 10], COMMAND.start] = command_gain
    path.parent.mkdir(parents=True, exist_ok=True)
    linear.save(path, linear.LinearPolicy(w, np.zeros(OBS), np.ones(OBS)))
    return path
