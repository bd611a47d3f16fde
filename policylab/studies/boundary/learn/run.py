"""`policylab boundary learn`: PPO (`policylab.learning`) on the Go1 in the training worlds of a recipe
(`worlds.RECIPES`), then the learned actor exported and judged in nominal worlds (docs/boundary.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from policylab.config import claim_out_dir
from policylab.envs.robots.robot import Robot, commanded_robot, robot
from policylab.fileio import atomic_write_bytes, write_json
from policylab.hashing import sha256_hex
from policylab.learning import checkpoint, shards
from policylab.learning.learner import Learner, check_sizes, shard_layout, train
from policylab.learning.network import GaussianActorCritic
from policylab.learning.ppo import PPO, Settings
from policylab.policies.mlp import export_robot_policy, robot_metadata
from policylab.result import Result, command_line
from policylab.studies.boundary.constants import CHECKPOINT_DIR
from policylab.studies.boundary.learn import judge, report
from policylab.studies.boundary.learn.learner import EXTRAS, Shard, input_affine
from policylab.studies.boundary.learn.worlds import PRIVILEGED, RECIPES, Recipe, recorded
from policylab.studies.boundary.requests import LearnRequest

ROBOT = "go1_imu"
OBS_DIM, ACT_DIM = 48, 12
# where a run goes and how often it is saved and judged, never what it learns: left out of the config
RUN_ONLY = ("out", "checkpoint_every", "eval_worlds", "ship_as")
POLICY_FILE = "policy.onnx"


def config(req: LearnRequest, recipe: Recipe) -> dict:
    """What OUT/config.json records: a rerun with the same config resumes, any other is refused."""
    cfg = req.model_dump(mode="json", exclude=set(RUN_ONLY))
    cfg["init"] = None if req.init is None else sha256_hex((req.init / "checkpoint.pt").read_bytes())
    rob = robot(ROBOT)
    return {
        **cfg,
        "command": "boundary learn",
        "robot": rob.identity,
        "recipe_values": recorded(recipe),
        "seed_range": "boundary.learn",
    }


def build(p: Plan) -> Learner:
    """The learner of a plan, fresh (or from --init's network); `learning.learner.train` resumes it."""
    shards.deterministic_torch()
    req, recipe, rob = p.req, p.recipe, p.robot
    hidden = [int(x) for x in req.hidden.split(",")]
    torch.manual_seed(req.seed)  # the initial weights (torch's init draws from the global generator)
    net = GaussianActorCritic(
        OBS_DIM,
        OBS_DIM + len(PRIVILEGED),
        ACT_DIM,
        hidden,
        hidden,
        "relu",
        *input_affine(),
        float(np.log(req.init_std)),
    )
    if req.init is not None:
        net.load_state_dict(checkpoint.read(req.init / "checkpoint.pt")["net"])
    ppo = PPO(net, Settings.of(req), shards.Threads(req.threads), req.seed)
    sizes, gen_seeds = shard_layout(req.envs, req.threads, req.seed)
    shard_list = [
        Shard(rob, recipe, k, req.threads, n, g, req.rollout, req.gamma, req.gae_lambda)
        for k, (n, g) in enumerate(zip(sizes, gen_seeds))
    ]
    updates = req.steps // (req.envs * req.rollout)
    return Learner(ppo, shard_list, sizes, req.rollout, OBS_DIM + len(PRIVILEGED), ACT_DIM, updates, EXTRAS)


def status(learner: Learner) -> str:
    c = learner.curves
    ret, speed = c["return_mean"][-1], c["forward_speed"][-1]
    return ("return -" if ret is None else f"return {ret:.2f}") + f", speed {speed:.2f} m/s"


@dataclass(frozen=True)
class Plan:
    """A learn run, resolved once (`plan`): its recipe, the robot it plays (go1_imu with the recipe's
    command) and the config OUT records."""

    req: LearnRequest
    recipe: Recipe
    robot: Robot
    config: dict


def plan(req: LearnRequest) -> Plan:
    """Check what the request model could not (the sizes a learner needs, `learner.check_sizes`) and resolve
    the recipe and the robot; `BadInput` naming the option, nothing written."""
    check_sizes(req.threads, req.envs, req.rollout, req.minibatch, req.steps, what="worlds")
    recipe = RECIPES[req.recipe]
    return Plan(req, recipe, commanded_robot(robot(ROBOT), list(recipe.command)), config(req, recipe))


def learn(req: LearnRequest, stop_after: int | None = None) -> tuple[Learner, dict]:
    """Plan, claim OUT, then learn (or resume) to the end of the budget; the learner and its config."""
    p = plan(req)
    return learn_planned(p, stop_after), p.config


def learn_planned(p: Plan, stop_after: int | None = None) -> Learner:
    """Claim OUT, then learn (or resume) the plan to the end of its budget."""
    req = p.req
    claim_out_dir(req.out, p.config)
    learner = build(p)
    return train(learner, req.out, req.checkpoint_every, f"learning {req.recipe}", status, stop_after)


def run(req: LearnRequest) -> Result:
    """`policylab boundary learn`: learn (or resume), export OUT/policy.onnx, judge it in nominal worlds,
    write learn.json and report.html."""
    p = plan(req)
    learner, cfg, recipe = learn_planned(p), p.config, p.recipe
    policy = req.out / POLICY_FILE
    export_robot_policy(
        learner.net.actor_layers(), policy, activation="relu", metadata=robot_metadata(p.robot.identity)
    )  # a file played without --robot names it
    nominal = None
    if req.eval_worlds:
        nominal = judge.nominal(policy, p.robot, req.eval_worlds, recipe.command[0], nthread=req.threads)
    data = report.build(req.out, learner, cfg, command_line("policylab boundary learn", req), nominal, POLICY_FILE)
    if req.eval_worlds and recipe.command_amp is not None:  # a joystick recipe: does it follow other commands?
        data["tracking"] = judge.tracking(policy, robot(ROBOT), req.eval_worlds, nthread=req.threads)
    data["shipped_as"] = req.ship_as
    page = report.write(req.out, data)
    head = [f"learned network: {policy}"]
    if req.ship_as:
        head.append(f"committed as {ship(req.out, req.ship_as, data, recipe)}")
    if nominal is not None:
        speed = "-" if nominal["speed_mps"] is None else f"{nominal['speed_mps']:.2f} m/s"
        head.append(
            f"nominal worlds: {nominal['survived']}/{nominal['worlds']} survived 5 s, forward speed {speed} "
            f"(command {recipe.command[0]} m/s)"
        )
    return Result(page, tuple(head))


def ship(out: Path, name: str, data: dict, recipe: Recipe) -> Path:
    """Commit OUT's network as checkpoint `name`: the network file, its training record (what names the
    robot and the command it follows, the config and the rerun line, the nominal judgement, the curves)
    and the learner's timings, into the committed checkpoints' folder."""
    raw = (out / POLICY_FILE).read_bytes()
    atomic_write_bytes(CHECKPOINT_DIR / f"{name}.onnx", raw)
    record = {
        "name": name,
        "kind": "onnx",
        "robot": ROBOT,
        "command": list(recipe.command),
        "checkpoint_sha256": sha256_hex(raw),
        "trained_by": "policylab boundary learn",
        **{
            k: data[k]
            for k in ("rerun", "config", "network", "updates", "agent_steps", "episodes", "nominal", "curves")
        },
        **({"tracking": data["tracking"]} if "tracking" in data else {}),
    }
    write_json(CHECKPOINT_DIR / f"{name}.json", record)
    write_json(CHECKPOINT_DIR / f"{name}.timing.json", data["timing"])
    return CHECKPOINT_DIR / f"{name}.onnx"
