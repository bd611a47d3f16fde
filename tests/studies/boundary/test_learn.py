"""`policylab boundary learn`: PPO on the Go1 (go1_imu) on tiny budgets. The Gaussian policy's
log-probabilities are a normal density's, the training worlds reset and push as their recipe says, the
reward pays for standing and walking and nothing for a fall, a killed run resumes to the same bytes,
and the command writes a network file that plays in the boundary study as the trained actor acts."""

import dataclasses
import json

import numpy as np
import pytest
import torch

from policylab.cli import invoke
from policylab.config import forget_claims, validated
from policylab.envs.robots.robot import commanded_robot, robot
from policylab.learning.learner import CHECKPOINT
from policylab.learning.network import GaussianActorCritic
from policylab.report.browser import chromium_path, render_check
from policylab.rollout.seeds import named_range
from policylab.studies.boundary.learn import worlds
from policylab.studies.boundary.learn.run import learn
from policylab.studies.boundary.requests import LearnRequest

TINY = {
    "steps": 16 * 8 * 3,
    "envs": 16,
    "rollout": 8,
    "minibatch": 64,
    "epochs": 2,
    "hidden": "16,16",
    "checkpoint_every": 1,
    "eval_worlds": 0,
}


def seeds_from(start: int = 0):
    it = iter(range(start, 10**6))
    return lambda k: np.array([next(it) for _ in range(k)])


def go1(recipe=worlds.RECIPES["go1_v2"]):
    return commanded_robot(robot("go1_imu"), list(recipe.command))


def test_gaussian_log_probability_and_entropy_are_the_normal_density():
    torch.manual_seed(0)
    net = GaussianActorCritic(5, 7, 3, [8], [8], "relu", np.zeros(7, np.float32), np.ones(7, np.float32), -0.7)
    x = torch.randn(6, 7)
    act = torch.randn(6, 3)
    logp, entropy, value = net.evaluate(x, act)
    mean, v = net(x)
    normal = torch.distributions.Normal(mean, net.log_std.exp())
    assert torch.allclose(logp, normal.log_prob(act).sum(1), atol=1e-5)
    assert torch.allclose(entropy, normal.entropy().sum(1), atol=1e-5)
    assert torch.equal(value, v) and value.shape == (6,)
    sampled, logp_s = net.sample(mean, torch.Generator().manual_seed(1))
    assert torch.allclose(logp_s, normal.log_prob(sampled).sum(1), atol=1e-5)


def test_the_actor_ignores_the_privileged_inputs():
    torch.manual_seed(0)
    net = GaussianActorCritic(5, 7, 3, [8], [8], "relu", np.zeros(7, np.float32), np.ones(7, np.float32), 0.0)
    x = torch.randn(4, 7)
    y = x.clone()
    y[:, 5:] += 10.0
    assert torch.equal(net(x)[0], net(y)[0]) and not torch.equal(net(x)[1], net(y)[1])


def test_standing_pays_and_a_fall_ends_the_episode_without_pay():
    rob = go1()
    w = worlds.TrainingWorlds(rob, worlds.RECIPES["go1_v2"], 4, seeds_from())
    obs = w.observe()
    for _ in range(10):
        obs, rew, fell, trunc = w.step(np.zeros((4, 12)))
        assert (rew > 0).all() and not fell.any() and not trunc.any()
    # tip world 0 on its back: the frozen failure rule marks it, and its last step pays nothing
    w.qpos[0, 3:7] = [0.0, 1.0, 0.0, 0.0]
    w.batch.forward([0])
    obs, rew, fell, trunc = w.step(np.zeros((4, 12)))
    assert fell[0] and not fell[1:].any() and rew[0] == 0.0


def test_reset_draws_friction_and_state_from_the_episode_seed():
    rob = go1()
    a = worlds.TrainingWorlds(rob, worlds.RECIPES["go1_v2"], 3, seeds_from(100))
    b = worlds.TrainingWorlds(rob, worlds.RECIPES["go1_v2"], 1, seeds_from(101))
    assert a.seed[1] == b.seed[0] == 101
    assert a.mu[1] == b.mu[0] and 0.4 <= a.mu[1] <= 1.0
    assert np.array_equal(a.qpos[1], b.qpos[0])
    assert np.array_equal(a.friction[1, rob.friction_geoms, 0], np.full(len(rob.friction_geoms), a.mu[1]))
    assert len(set(a.mu)) == 3


def test_push_recipe_pushes_sideways_for_its_duration():
    recipe = worlds.RECIPES["go1_v3"]
    rob = go1(recipe)
    w = worlds.TrainingWorlds(rob, recipe, 2, seeds_from())
    start, end, mag = w.push_at.copy(), w.push_end.copy(), w.push_mag.copy()
    assert ((end - start) == round(recipe.push_s / rob.control_dt)).all()
    assert (mag <= recipe.push_bw[1] * rob.body_weight_n()).all()
    obs = w.observe()
    seen = np.zeros((2, int(end.max()) + 1, 2))
    heading = np.zeros((2, int(end.max()) + 1))
    for k in range(int(end.max()) + 1):
        heading[:, k] = rob.heading(w.qpos)
        obs, *_ = w.step(np.zeros((2, 12)))
        seen[:, k] = w.xfrc[:, rob.push_body, :2]
    for i in range(2):
        on = np.flatnonzero(np.linalg.norm(seen[i], axis=1) > 0)
        assert on[0] == start[i] and on[-1] == end[i] - 1
        assert np.allclose(np.linalg.norm(seen[i, on], axis=1), mag[i])
        forward = np.array([np.cos(heading[i, on[0]]), np.sin(heading[i, on[0]])])
        assert abs(seen[i, on[0]] @ forward) < 1e-9 * mag[i]  # sideways to the heading at its onset


def test_joystick_recipe_draws_each_worlds_command_from_its_episode_and_shows_it():
    recipe = dataclasses.replace(worlds.RECIPES["go1_v4"], anchor_ramp=0.0, anchor_end=0.0)
    rob = go1(recipe)
    a = worlds.TrainingWorlds(rob, recipe, 3, seeds_from(200))
    b = worlds.TrainingWorlds(rob, recipe, 1, seeds_from(202))
    assert np.array_equal(a.cmd[2], b.cmd[0]) and len({tuple(c) for c in a.cmd}) == 3
    assert (np.abs(a.cmd) <= np.asarray(recipe.command_amp)).all()
    assert np.array_equal(a.observe()[:, -3:], a.cmd)
    # a world keeps its command until its draw step, then shows the new one in the observation it returns
    i = int(np.argmin(a.cmd_at))
    before, at = a.cmd[i].copy(), int(a.cmd_at[i])
    for k in range(1, at + 1):
        obs, *_ = a.step(np.zeros((3, 12)))
        if k < at:
            assert np.array_equal(obs[i, -3:], before)
    assert not np.array_equal(a.cmd[i], before) and np.array_equal(obs[i, -3:], a.cmd[i])


def test_the_push_curriculum_ramps_the_range_and_old_recipes_record_as_they_did():
    v4 = worlds.RECIPES["go1_v4"]
    assert v4.push_scale(0.0) == 0.0 and v4.push_scale(v4.push_ramp / 2) == 0.5 and v4.push_scale(0.9) == 1.0
    assert worlds.RECIPES["go1_v3"].push_scale(0.0) == 1.0
    assert v4.anchor(0.0) == 1.0 and v4.anchor(v4.anchor_ramp) == pytest.approx(v4.anchor_end) == v4.anchor(1.0)
    assert (worlds.TrainingWorlds(go1(v4), v4, 4, seeds_from()).cmd == v4.command).all()  # the first draws: anchored
    rob = go1(v4)
    w = worlds.TrainingWorlds(rob, v4, 8, seeds_from())
    assert (w.push_mag == 0).all()  # a run's first episodes: the ramp starts at no push
    from policylab.studies.boundary.checkpoint import committed_record

    for name in ("go1_v2", "go1_v3"):
        assert (
            json.loads(json.dumps(worlds.recorded(worlds.RECIPES[name])))
            == committed_record(name)["config"]["recipe_values"]
        )
    assert worlds.recorded(v4)["command_amp"] == v4.command_amp and "push_ramp" not in worlds.recorded(
        worlds.RECIPES["go1_v3"]
    )


@pytest.mark.parametrize("recipe", ["go1_v2", "go1_v4"])
def test_a_killed_run_resumes_to_the_same_bytes(tmp_path, recipe):
    a = validated(LearnRequest, {"out": tmp_path / "full", **TINY, "recipe": recipe})
    learn(a)
    forget_claims()
    b = validated(LearnRequest, {"out": tmp_path / "killed", **TINY, "recipe": recipe})
    learner, _ = learn(b, stop_after=1)
    assert learner.done == 1
    forget_claims()
    learn(b)
    forget_claims()
    assert (tmp_path / "full" / CHECKPOINT).read_bytes() == (tmp_path / "killed" / CHECKPOINT).read_bytes()


def test_episode_seeds_come_from_the_learn_range(tmp_path):
    learner, _ = learn(validated(LearnRequest, {"out": tmp_path / "r", **TINY, "threads": 2}))
    forget_claims()
    rng = named_range("boundary", "learn")
    for k, sh in enumerate(learner.shards):
        s = sh.worlds.seed
        assert ((s - rng.base) % 2 == k).all() and (s >= rng.base).all() and (s < rng.base + rng.size).all()


def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "bad"
    for args, field in (
        (["--envs", "8", "--rollout", "4", "--minibatch", "64"], "minibatch"),
        (["--hidden", "16,x"], "hidden"),
        (["--init", str(tmp_path)], "init"),
        (["--threads", "9", "--envs", "8"], "threads"),
    ):
        assert invoke(["boundary", "learn", "--out", str(out), *args]) == 2
        err = capsys.readouterr().err.strip()
        assert field in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_the_command_exports_the_actor_judges_it_and_ships_it(tmp_path, monkeypatch, capsys):
    from policylab.policies.files import load_policy
    from policylab.studies.boundary.learn import run as learn_run

    monkeypatch.setattr(learn_run, "CHECKPOINT_DIR", tmp_path / "checkpoints")
    (tmp_path / "checkpoints").mkdir()
    out = tmp_path / "run"
    args = [
        "boundary",
        "learn",
        "--out",
        str(out),
        "--steps",
        "256",
        "--envs",
        "16",
        "--rollout",
        "8",
        "--minibatch",
        "64",
        "--hidden",
        "16,16",
        "--eval-worlds",
        "4",
        "--ship-as",
        "go1_v9",
    ]
    assert invoke(args) == 0
    data = json.loads((out / "learn.json").read_text())
    assert data["updates"] == 2 and data["agent_steps"] == 256 and data["nominal"]["worlds"] == 4
    assert len(data["curves"]["forward_speed"]) == 2 and (out / "report.html").is_file()
    assert (out / "figures" / "curves.png").is_file()
    # the file is the trained actor's mean, and the loader runs it on the CPU-independent kernel
    learner, _ = learn(
        validated(
            LearnRequest, {"out": out, "steps": 256, "envs": 16, "rollout": 8, "minibatch": 64, "hidden": "16,16"}
        )
    )
    forget_claims()
    obs = np.random.default_rng(0).standard_normal((6, 48))
    policy = load_policy(out / "policy.onnx", 48, 12)
    with torch.no_grad():
        mean = learner.net(learner.net.normalise(np.concatenate([obs, np.zeros((6, 4))], 1).astype(np.float32)))[0]
    assert np.allclose(policy.act(obs), mean.numpy(), atol=1e-5)
    assert np.array_equal(policy.act(obs[2:3])[0], policy.act(obs)[2])
    from policylab.policies.files import named_robot

    assert named_robot(out / "policy.onnx") == "go1_imu"  # played without --robot on the robot it learned on
    shipped = tmp_path / "checkpoints"
    assert (shipped / "go1_v9.onnx").read_bytes() == (out / "policy.onnx").read_bytes()
    record = json.loads((shipped / "go1_v9.json").read_text())
    assert record["robot"] == "go1_imu" and record["command"] == [0.5, 0.0, 0.0]
    assert record["rerun"].startswith("policylab boundary learn") and (shipped / "go1_v9.timing.json").is_file()
    # rerunning the finished command trains nothing more and gives the same network
    before = (out / "policy.onnx").read_bytes()
    assert invoke(args) == 0
    assert (out / "policy.onnx").read_bytes() == before


@pytest.mark.skipif(chromium_path() is None, reason="Chromium not installed (make setup installs it)")
def test_the_report_renders_its_curves_judgement_and_tracking(tmp_path):
    out = tmp_path / "run"
    assert (
        invoke(
            [
                "boundary",
                "learn",
                "--out",
                str(out),
                "--steps",
                "128",
                "--envs",
                "16",
                "--rollout",
                "8",
                "--minibatch",
                "64",
                "--hidden",
                "8",
                "--eval-worlds",
                "2",
                "--recipe",
                "go1_v4",
            ]
        )
        == 0
    )
    seen = render_check(out / "report.html")
    assert seen["images"] == seen["loaded"] == 1
    assert "nominal survival" in seen["text"] and "Training curves" in seen["text"]
    tracking = json.loads((out / "learn.json").read_text())["tracking"]  # a joystick recipe's commands judged
    assert len(tracking["commands"]) == 5 and tracking["worlds"] == 2
    assert "commands followed within 20%" in seen["text"] and f"{tracking['tracked']} of 5" in seen["text"]


def test_body_velocity_is_in_the_trunks_heading_frame():
    """A trunk heading 90 degrees (world +y) that moves 1 m/s along +y and 0.5 m/s along -x goes forward
    at 1 and left at 0.5; one turning at 1 rad/s reports it, through the +-pi wrap."""
    from policylab.studies.boundary.learn.judge import body_velocity

    rob = robot("go1_imu")
    dt, n = rob.control_dt, 5
    q = np.tile(rob.nominal_qpos, (1, n, 1)).astype(float)
    yaw = np.pi / 2 + np.pi * 0.999 * np.arange(n) / (n - 1)  # crosses +pi
    a = rob.root_qpos
    q[0, :, a] += -0.5 * dt * np.arange(n)
    q[0, :, a + 1] += 1.0 * dt * np.arange(n)
    q[0, :, a + 3], q[0, :, a + 6] = np.cos(yaw / 2), np.sin(yaw / 2)
    q[0, :, a + 4] = q[0, :, a + 5] = 0.0
    fwd, lat, turn = body_velocity(rob, q)
    np.testing.assert_allclose(fwd[0, 0], 1.0, atol=1e-9)
    np.testing.assert_allclose(lat[0, 0], 0.5, atol=1e-9)
    np.testing.assert_allclose(turn[0], np.pi * 0.999 / (n - 1) / dt, rtol=1e-9)


def test_tracking_judges_each_command_as_every_sweep_plays_the_file():
    """go1_v2 was trained for 0.5 m/s forward only: it tracks that and walks forward whatever it is told."""
    from policylab.studies.boundary.constants import CHECKPOINT_DIR
    from policylab.studies.boundary.learn.judge import tracking

    judged = tracking(CHECKPOINT_DIR / "go1_v2.onnx", robot("go1_imu"), 8, commands=((0.5, 0.0, 0.0), (0.0, 0.0, 1.0)))
    forward, turn = judged["commands"]
    assert forward["tracked"] and abs(forward["achieved"][0] - 0.5) < 0.1 and forward["survival"] == 1.0
    assert not turn["tracked"] and abs(turn["achieved"][2]) < 0.2 and turn["achieved"][0] > 0.3
    assert judged["tracked"] == 1
