"""The worlds `boundary learn` trains in: B Go1 worlds on one `mujoco.batch.Batch`, each reset on its own
seed, friction and pushes drawn per episode, and the reward (docs/boundary.md, "A Go1 network learned with PPO")."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import mujoco.batch
import numpy as np

from policylab import portable_math
from policylab.envs.robots.robot import Robot

FOOT_RADIUS = 0.023  # the go1_imu feet spheres (m)
CONTACT_Z = FOOT_RADIUS + 0.005  # a foot lower than this touches the floor
AIR_TIME_TARGET = 0.1  # s: a step shorter than this costs, longer pays (the trainer's threshold)
POSE_WEIGHTS = np.array([1.0, 1.0, 0.1] * 4)  # abduction, hip, knee: the knee may bend freely
LAYOUT = ["sensor", "sensor", "site_gravity", "joint_pos_rel", "joint_vel", "last_action", "command"]
PRIVILEGED = ("friction", "push_x", "push_y", "torso_z")  # what only the critic sees


@dataclass(frozen=True)
class Recipe:
    """The training distribution and the reward's weights (docs/boundary.md)."""

    command: tuple[float, float, float] = (0.5, 0.0, 0.0)  # (vx m/s, vy m/s, yaw rate rad/s), every episode
    friction: tuple[float, float] = (0.4, 1.0)  # uniform range of the feet and floor's sliding friction
    push_bw: tuple[float, float] = (0.0, 0.0)  # lateral push magnitude range, in body weights; (0, 0): none
    push_s: float = 0.5  # each push's duration (s)
    push_every_s: tuple[float, float] = (1.0, 3.0)  # uniform wait before each push (s)
    episode_steps: int = 1000
    sigma: float = 0.25
    w_lin: float = 1.0
    w_yaw: float = 0.5
    w_vz: float = -0.5
    w_angxy: float = -0.05
    w_tilt: float = -5.0
    w_torque: float = -2e-4
    w_rate: float = -0.01
    w_energy: float = -1e-3
    w_pose: float = 0.5
    w_air: float = 0.1
    w_fall: float = -1.0
    # The trainers' joystick: each world's command is drawn per component from U(-amp, amp), kept with
    # probability `command_keep` (else 0), and drawn again after an exponential wait of mean
    # `command_every_s`; None: every episode follows `command`.
    command_amp: tuple[float, float, float] | None = None
    command_keep: tuple[float, float, float] = (1.0, 1.0, 1.0)
    command_every_s: float = 5.0
    # A draw is `command` itself with a probability that falls linearly from 1 to `anchor_end` over the
    # first `anchor_ramp` of the run's updates (a curriculum: a robot that first learns to walk at one
    # command learns the others from there; measured, go1_v4 with random commands from the start still
    # stood still after 6.5M steps where go1_v2 walked after 2M), and stays at `anchor_end`.
    anchor_ramp: float = 0.0
    anchor_end: float = 0.0
    # The push range's upper end grows linearly from 0 to push_bw[1] over this fraction of the run's
    # updates (a curriculum: the gait comes first); 0: the whole range from the start.
    push_ramp: float = 0.0

    @property
    def pushes(self) -> bool:
        return self.push_bw[1] > 0

    def push_scale(self, progress: float) -> float:
        """The share of the push range's upper end in force at `progress` (updates done / updates)."""
        return 1.0 if self.push_ramp <= 0 else min(1.0, progress / self.push_ramp)

    def anchor(self, progress: float) -> float:
        """The probability that a command draw at `progress` is `command` itself."""
        if self.anchor_ramp <= 0:
            return self.anchor_end
        return 1.0 - (1.0 - self.anchor_end) * min(1.0, progress / self.anchor_ramp)


# Fields added after go1_v2/v3 were trained, with the values that leave a recipe as it was: a recipe
# records them (config.json's recipe_values) only when it sets them, so older run folders resume.
LATER_DEFAULTS = {
    "command_amp": None,
    "command_keep": (1.0, 1.0, 1.0),
    "command_every_s": 5.0,
    "push_ramp": 0.0,
    "anchor_ramp": 0.0,
    "anchor_end": 0.0,
}

# go1_v4: the common MJX trainer's joystick ranges and zeroing (shared/specs/ecosystem.md), reached
# from the map's own command (0.5 m/s forward) over the first 30% of the run, a fifth of the draws
# staying there; the study's own lateral pushes (0.5 s, up to 1.5 body weights, from 0 as the
# curriculum ramps) from the start; friction down to 0.2.
GO1_V4 = Recipe(
    friction=(0.2, 1.0),
    push_bw=(0.0, 1.5),
    push_ramp=0.3,
    command_amp=(1.5, 0.8, 1.2),
    command_keep=(0.9, 0.25, 0.5),
    anchor_ramp=0.3,
    anchor_end=0.2,
)

RECIPES = {
    "go1_v2": Recipe(),  # friction randomised, one forward command, no pushes
    "go1_v3": Recipe(push_bw=(0.0, 1.2)),  # one deliberate change: lateral pushes during training
    "go1_v4": GO1_V4,
    "go1_v5": replace(GO1_V4, friction=(0.05, 1.0)),  # one deliberate change: frictions down to 0.05
}


def recorded(recipe: Recipe) -> dict:
    """The recipe as a run's config records it: every field, less the later ones it leaves off."""
    values = asdict(recipe)
    for k, off in LATER_DEFAULTS.items():
        if values[k] == off:
            del values[k]
    return values


class TrainingWorlds:
    """B Go1 worlds (nthread 1: a learner's shard), reset on the seeds `fresh(k)` hands out."""

    def __init__(self, rob: Robot, recipe: Recipe, n: int, fresh):
        if [t.spec.term for t in rob.terms] != LAYOUT:
            raise ValueError(f"{rob.spec.name}: boundary learn needs the go1_imu observation layout")
        self.rob, self.recipe, self.n, self.fresh = rob, recipe, n, fresh
        self.dt = rob.control_dt
        self.batch = b = mujoco.batch.Batch(rob.base, n, 1)
        self.friction = b.expand("geom_friction")
        self.qpos, self.qvel = b.bind("qpos"), b.bind("qvel")
        self.derived = {f: b.bind(f) for f in rob.data_fields}
        self.ctrl = b.bind("ctrl")
        self.xfrc = b.bind("xfrc_applied")
        self.force = b.bind("actuator_force")
        self.geom_z = b.bind("geom_xpos")
        self.feet = np.array([rob.base.geom(g).id for g in ("FL", "FR", "RL", "RR")])
        self.weight = rob.body_weight_n()
        self.observer = rob.observer(n)
        self.mu = np.zeros(n)
        self.step_k = np.zeros(n, dtype=np.int64)
        self.air = np.zeros((n, 4))
        self.touch = np.ones((n, 4), dtype=bool)
        self.push_at = np.zeros(n, dtype=np.int64)  # the step the next push starts
        self.push_mag = np.zeros(n)
        self.push_side = np.zeros(n)  # +1 left, -1 right of the heading at its onset
        self.push_end = np.zeros(n, dtype=np.int64)
        self.push_xy = np.zeros((n, 2))
        self.push_scale = recipe.push_scale(0.0)  # the curricula's state; the learner sets them per rollout
        self.anchor = recipe.anchor(0.0)
        self.cmd = np.tile(np.asarray(recipe.command, dtype=float), (n, 1))  # each world's command
        self.cmd_at = np.full(n, -1, dtype=np.int64)  # the step its next command is drawn (-1: never)
        self.rngs: list[np.random.Generator] = [np.random.default_rng() for _ in range(n)]
        self.seed = np.zeros(n, dtype=np.int64)
        self.reset(np.arange(n))

    # -- episodes --------------------------------------------------------------------------------
    def reset(self, rows: np.ndarray) -> None:
        """Start a fresh episode in `rows`: a new seed, its initial state, friction and pushes."""
        seeds = self.fresh(len(rows))
        self.batch.reset(rows, stage=0)
        r = self.recipe
        for i, s in zip(rows, seeds):
            self.seed[i] = s
            self.qpos[i], self.qvel[i] = self.rob.reset_state(int(s))
            rng = self.rngs[i] = np.random.default_rng((int(s), 1))
            self.mu[i] = rng.uniform(*r.friction)
            self.friction[i, self.rob.friction_geoms, 0] = self.mu[i]
            self._schedule(i, 0)
            self._command(i, 0)
        self.batch.forward(rows)
        self.step_k[rows] = 0
        self.air[rows] = 0.0
        self.touch[rows] = True
        self.push_xy[rows] = 0.0
        self.xfrc[rows] = 0.0
        if self.observer.last is not None:
            self.observer.last[rows] = self.rob.initial_action

    def _schedule(self, i: int, k: int) -> None:
        """Draw world i's next push (after step k) from its episode's generator."""
        r = self.recipe
        if not r.pushes:
            self.push_at[i] = -1
            return
        rng = self.rngs[i]
        self.push_at[i] = k + int(round(rng.uniform(*r.push_every_s) / self.dt))
        self.push_mag[i] = rng.uniform(*r.push_bw) * self.weight * self.push_scale
        self.push_side[i] = 1.0 if rng.random() < 0.5 else -1.0
        self.push_end[i] = self.push_at[i] + int(round(r.push_s / self.dt))

    def _command(self, i: int, k: int) -> None:
        """Draw world i's command (at step k) and the step of its next draw, from its episode's generator."""
        r = self.recipe
        if r.command_amp is None:
            return
        rng = self.rngs[i]
        amp = np.asarray(r.command_amp)
        anchored = rng.random() < self.anchor
        keep = rng.random(3) < np.asarray(r.command_keep)
        self.cmd[i] = r.command if anchored else rng.uniform(-amp, amp) * keep
        self.cmd_at[i] = k + max(1, int(round(rng.exponential(r.command_every_s) / self.dt)))

    def observe(self, rows=slice(None)) -> np.ndarray:
        """The policy's observation of the worlds `rows` (the spec's, float64), each with its own command
        in the command term's place (the layout's last three values)."""
        src = {"qpos": self.qpos, "qvel": self.qvel, "time": self.batch.bind("time"), **self.derived}
        obs = self.observer.observe({k: v[rows] for k, v in src.items()}, rows)
        if self.recipe.command_amp is not None:
            obs[:, -3:] = self.cmd[rows]
        return obs

    def privileged(self) -> np.ndarray:
        """What only the critic sees (PRIVILEGED): friction, the push force (body weights) and torso height."""
        return np.concatenate(
            [self.mu[:, None], self.push_xy / self.weight, self.rob.torso_z(self.qpos)[:, None]], axis=1
        )

    # -- a control step --------------------------------------------------------------------------
    def _pushes(self) -> None:
        r = self.recipe
        if not r.pushes:
            return
        k = self.step_k
        onset = np.flatnonzero(k == self.push_at)
        if len(onset):
            angle = self.rob.heading(self.qpos[onset]) + self.push_side[onset] * (np.pi / 2)
            self.push_xy[onset, 0] = self.push_mag[onset] * portable_math.cos_array(angle)
            self.push_xy[onset, 1] = self.push_mag[onset] * portable_math.sin_array(angle)
        over = np.flatnonzero(k == self.push_end)
        if len(over):
            self.push_xy[over] = 0.0
            for i in over:
                self._schedule(int(i), int(k[i]))
        self.xfrc[:, self.rob.push_body, :2] = self.push_xy

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Apply `action` ((B, 12), the policy's) for one control step; the next
        observation, the reward, and where the episode ended by a fall (terminal) or its length
        (truncated). Ended worlds are not reset here (`reset`)."""
        r = self.recipe
        last = self.observer.last.copy()
        self.observer.acted(action)
        self._pushes()
        self.ctrl[...] = self.rob.ctrl(action)
        self.batch.step(nstep=self.rob.frame_skip)
        self.step_k += 1
        nxt = self.observe()
        lin, gyro, grav = nxt[:, 0:3], nxt[:, 3:6], nxt[:, 6:9]
        cmd = self.cmd
        lin_err = (lin[:, 0] - cmd[:, 0]) ** 2 + (lin[:, 1] - cmd[:, 1]) ** 2
        yaw_err = (gyro[:, 2] - cmd[:, 2]) ** 2
        q_rel, qd = nxt[:, 9:21], nxt[:, 21:33]
        tau = self.force
        feet_z = self.geom_z[:, self.feet, 2]
        touch = feet_z < CONTACT_Z
        first = touch & ~self.touch
        self.air += self.dt
        # no stepping bonus while commanded to stand (the trainer's rule)
        air_bonus = ((self.air - AIR_TIME_TARGET) * first).sum(1) * (np.abs(cmd).sum(1) > 0.01)
        self.air[touch] = 0.0
        self.touch = touch
        fell = self.rob.fallen(self.qpos, self.qvel)
        rew = (
            r.w_lin * np.exp(-lin_err / r.sigma)
            + r.w_yaw * np.exp(-yaw_err / r.sigma)
            + r.w_vz * lin[:, 2] ** 2
            + r.w_angxy * (gyro[:, 0] ** 2 + gyro[:, 1] ** 2)
            + r.w_tilt * (grav[:, 0] ** 2 + grav[:, 1] ** 2)
            + r.w_torque * (tau**2).sum(1)
            + r.w_rate * ((action - last) ** 2).sum(1)
            + r.w_energy * np.abs(qd * tau).sum(1)
            + r.w_pose * np.exp(-(POSE_WEIGHTS * q_rel**2).sum(1))
            + r.w_air * air_bonus
            + r.w_fall * fell
        )
        rew = np.maximum(rew * self.dt, 0.0)
        trunc = ~fell & (self.step_k >= r.episode_steps)
        redraw = np.flatnonzero(self.step_k == self.cmd_at)
        for i in redraw:  # the next step's command: the observation returned here already shows it
            self._command(int(i), int(self.step_k[i]))
        if len(redraw):
            nxt[redraw, -3:] = self.cmd[redraw]
        return nxt, rew, fell, trunc

    # -- checkpoints -----------------------------------------------------------------------------
    STATE = (
        "mu",
        "step_k",
        "air",
        "touch",
        "push_at",
        "push_mag",
        "push_side",
        "push_end",
        "push_xy",
        "seed",
        "cmd",
        "cmd_at",
    )

    def state(self) -> dict:
        b = self.batch
        return {
            **{k: np.copy(getattr(self, k)) for k in self.STATE},
            "sim": {f: np.copy(b.bind(f)) for f in ("time", "qpos", "qvel", "qacc_warmstart", "ctrl", "xfrc_applied")},
            "last": np.copy(self.observer.last),
            "rngs": [g.bit_generator.state for g in self.rngs],
        }

    def load_state(self, s: dict) -> None:
        for k in self.STATE:
            if k in s:  # a checkpoint from before the per-world commands has none: they are the recipe's
                getattr(self, k)[...] = s[k]
        self.friction[:, self.rob.friction_geoms, 0] = self.mu[:, None]
        for f, v in s["sim"].items():
            self.batch.bind(f)[...] = v
        self.batch.forward()
        self.observer.last[...] = s["last"]
        for g, st in zip(self.rngs, s["rngs"]):
            g.bit_generator.state = st
