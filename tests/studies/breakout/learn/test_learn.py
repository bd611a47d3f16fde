"""`policylab breakout learn`: PPO in the shadow on tiny budgets (seconds). The env restarts finished
envs exactly, a run is byte-deterministic, a killed run resumes to the same bytes, the exported ONNX
file acts as the trained network does, and the report (with the ALE validation) renders."""

import json

import numpy as np
import pytest
import torch

from policylab.cli import invoke
from policylab.config import validated
from policylab.envs.breakout.contract import FIRE
from policylab.envs.breakout.shadow import ShadowBreakout
from policylab.learning.learner import CHECKPOINT
from policylab.policies.breakout_net import load
from policylab.report.browser import chromium_path, render_check
from policylab.rollout.seeds import named_range
from policylab.studies.breakout.learn.learner import Learner, train
from policylab.studies.breakout.learn.network import FIRE_LOGIT, LEGAL
from policylab.studies.breakout.learn.plan import Plan, plan
from policylab.studies.breakout.requests import LearnRequest
from tests.support.words import blank_tiles

TINY = {
    "steps": 1024,
    "envs": 8,
    "rollout": 32,
    "minibatch": 64,
    "epochs": 2,
    "hidden": 16,
    "max_steps": 40,
    "checkpoint_every": 1,
    "validate_episodes": 0,
}


def tiny(out, **kw) -> Plan:
    return plan(validated(LearnRequest, {"out": out, **TINY, **kw}))


def run_tiny(out, stop_after=None, **kw) -> Learner:
    out.mkdir(parents=True, exist_ok=True)
    return train(tiny(out, **kw), stop_after=stop_after)


@pytest.mark.parametrize("preset", ["ale-exact", "atari-cal", "go-v1"])  # ale-exact: learn's default
def test_reset_rows_restarts_envs_as_a_fresh_batch_would(preset):
    rng = np.random.default_rng(0)
    env = ShadowBreakout(6, preset, seeds=np.arange(6))
    env.reset()
    for _ in range(60):
        env.step(rng.integers(0, 4, 6))
    env.reset_rows([1, 4], [100, 200])
    fresh = ShadowBreakout(2, preset, seeds=[100, 200])
    fresh.reset()
    for _ in range(60):
        acts = rng.integers(0, 4, 6)
        env.step(acts)
        fresh.step(acts[[1, 4]])
    a, b = env.get_state(), fresh.get_state()
    for key in a:
        assert np.array_equal(a[key][[1, 4]], b[key]), key


def test_same_config_same_bytes_and_fresh_seeds(tmp_path):
    one, two = run_tiny(tmp_path / "a"), run_tiny(tmp_path / "b")
    assert (tmp_path / "a" / CHECKPOINT).read_bytes() == (tmp_path / "b" / CHECKPOINT).read_bytes()
    assert one.done == 4 and one.curves == two.curves
    for learner, name in ((one, "a"), (two, "b")):
        learner.net.export(learner.p.spec, tmp_path / f"{name}.onnx")
    assert (tmp_path / "a.onnx").read_bytes() == (tmp_path / "b.onnx").read_bytes()
    # every episode took a seed of breakout.learn below base + episodes started, none twice
    r = named_range("breakout", "learn")
    assert one.episodes > TINY["envs"]  # 40-step horizon: envs restarted
    playing = np.concatenate([sh.env.seeds for sh in one.shards])
    assert len(set(playing.tolist())) == playing.size
    assert set(playing.tolist()) <= set(range(r.base, r.base + one.episodes))
    other = run_tiny(tmp_path / "c", seed=1)
    assert not torch.equal(other.net.head.weight, one.net.head.weight)


@pytest.mark.parametrize("shape", [{}, {"envs": 12, "threads": 2, "steps": 1536}], ids=["tiny", "six-env-shards"])
def test_a_killed_run_resumes_to_the_bytes_of_an_uninterrupted_one(shape, tmp_path):
    """Six envs per shard: a shape whose first value forward after a resume differed in its last bit
    until the shard threads were settled (`ppo.PPO.settle_threads`)."""
    run_tiny(tmp_path / "whole", **shape)
    stopped = run_tiny(tmp_path / "killed", stop_after=2, **shape)
    assert stopped.done == 2
    resumed = run_tiny(tmp_path / "killed", **shape)
    assert resumed.done == 4
    assert (tmp_path / "killed" / CHECKPOINT).read_bytes() == (tmp_path / "whole" / CHECKPOINT).read_bytes()


@pytest.mark.parametrize("preset", ["ale-exact", "atari-cal"])
def test_a_game_moved_to_another_row_plays_on_as_it_would_have(preset):
    """`row_states` / `set_row_states` (what --late-starts resumes): a game copied mid-play into another
    env, then driven by the same actions, plays exactly as the original does, random streams included."""
    rng = np.random.default_rng(1)
    env = ShadowBreakout(4, preset, seeds=np.arange(4), max_steps=400)
    env.reset()
    for _ in range(80):
        env.step(rng.integers(0, 4, 4))
    env.set_row_states([3], env.row_states([1]))
    for _ in range(120):
        a = rng.integers(0, 4, 4)
        a[3] = a[1]
        env.step(a)
    state = env.get_state()
    for key, arr in state.items():
        assert np.array_equal(arr[1], arr[3]), key


LATE = {"late_starts": 0.5, "late_score": 1, "max_steps": 120, "steps": 2304, "envs": 12, "threads": 2}


def test_late_starts_resume_stored_games_and_leave_them_out_of_the_curves(tmp_path):
    """With --late-starts, games that reach --late-score are stored and restarts resume them (about the
    share asked); a resumed game is no whole game, so it never reaches the curves; a killed run resumes to
    the bytes of an uninterrupted one; without the option nothing is drawn or stored."""
    learner = run_tiny(tmp_path / "late", **LATE)
    stored = sum(sh.late_n for sh in learner.shards)
    assert stored > 0
    assert any((~sh.fresh).any() for sh in learner.shards)
    # the curves' episodes are whole games only: fewer than the episodes started
    assert sum(learner.curves["episodes"]) < learner.episodes
    for sh in learner.shards:
        for k, v in sh.late.items():  # every kept state is a game at or past the score it was kept at
            if k == "I":
                assert (v[: min(sh.late_n, 256), sh.env._K.SCORE] >= 1).all()
    stopped = run_tiny(tmp_path / "killed", stop_after=2, **LATE)
    assert stopped.done == 2
    run_tiny(tmp_path / "killed", **LATE)
    assert (tmp_path / "killed" / CHECKPOINT).read_bytes() == (tmp_path / "late" / CHECKPOINT).read_bytes()
    unset = {**LATE, "late_starts": 0.0, "late_score": 300}  # the options' defaults
    plain = run_tiny(tmp_path / "plain", **unset)
    assert all(sh.late is None and sh.late_n == 0 and sh.fresh.all() for sh in plain.shards)
    config = tiny(tmp_path / "plain", **unset).config
    assert "late_starts" not in config and "late_score" not in config  # unset: a run from before them resumes
    assert tiny(tmp_path / "late", **LATE).config["late_starts"] == 0.5


def test_a_resumed_run_has_its_bytes_whatever_ran_before_in_the_process(tmp_path):
    """The resume test's learner, in one process, before and after other learners (other thread
    counts and shapes) and other torch work on this thread (more intra-op threads, other products):
    the whole run, the killed and resumed run and the whole run again end with the same bytes."""
    shape = {"envs": 12, "threads": 2, "steps": 1536}

    def others(tag: str) -> None:
        torch.set_num_threads(2)
        x = torch.randn(300, 117, requires_grad=True)
        (x @ torch.randn(117, 64)).tanh().sum().backward()
        for threads in (1, 3):
            run_tiny(tmp_path / f"{tag}{threads}", threads=threads, stop_after=1)

    run_tiny(tmp_path / "whole", **shape)
    others("a")
    run_tiny(tmp_path / "killed", stop_after=2, **shape)
    others("b")
    run_tiny(tmp_path / "killed", **shape)
    others("c")
    run_tiny(tmp_path / "again", **shape)
    whole = (tmp_path / "whole" / CHECKPOINT).read_bytes()
    assert (tmp_path / "killed" / CHECKPOINT).read_bytes() == whole
    assert (tmp_path / "again" / CHECKPOINT).read_bytes() == whole


def test_onnx_file_acts_as_the_network_and_never_fires(tmp_path):
    learner = run_tiny(tmp_path / "run", history=2)
    path = tmp_path / "policy.onnx"
    learner.net.export(learner.p.spec, path)
    net = load(path)
    assert net.spec == learner.p.spec
    obs = learner.shards[0].obs
    with torch.no_grad():
        legal, _ = learner.net(learner.net.normalise(obs))
    logits = torch.full((obs.shape[0], 4), FIRE_LOGIT)
    logits[:, list(LEGAL)] = legal
    onnx_logits = net.network.onnxruntime(obs)
    assert np.allclose(onnx_logits, logits.numpy(), atol=1e-4)
    assert np.array_equal(net.act(obs), logits.argmax(1).numpy())
    assert (net.act(np.random.default_rng(0).normal(size=(256, net.spec.dim)).astype(np.float32)) != FIRE).all()


def test_shard_gradients_sum_to_the_whole_minibatch_gradient(tmp_path):
    """Each thread's chunk loss is its sum over the minibatch size, so the chunk gradients (on the
    replicas) add up to the gradient of the whole minibatch's mean loss on one network."""
    learner = Learner(tiny(tmp_path, threads=3))
    batch, *_ = learner.rollout()
    idx = torch.randperm(batch["act"].shape[0], generator=torch.Generator().manual_seed(0))[:64]
    adv = batch["adv"][idx]
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    whole = learner.ppo.chunk_grad(learner.net, batch, idx, adv, 64)
    one = [q.grad.clone() for q in learner.net.parameters()]
    cuts = (0, 20, 41, 64)
    parts = [
        learner.ppo.chunk_grad(net, batch, idx[a:b], adv[a:b], 64)
        for net, a, b in zip(learner.ppo.replicas, cuts, cuts[1:])
    ]
    assert torch.allclose(sum(parts), whole, atol=1e-5)
    for k, _q in enumerate(learner.net.parameters()):
        summed = sum(list(net.parameters())[k].grad for net in learner.ppo.replicas)
        assert torch.allclose(summed, one[k], atol=1e-6)
    assert not torch.equal(parts[0], parts[1])  # the chunks are different samples


def test_thread_counts_each_deterministic_and_all_learn(tmp_path):
    """--threads 1 and 3 each repeat their own bytes (the shards' seeds and streams depend on it)."""
    for threads in (1, 3):
        a = run_tiny(tmp_path / f"a{threads}", threads=threads)
        b = run_tiny(tmp_path / f"b{threads}", threads=threads)
        one, two = (tmp_path / f"{x}{threads}" / CHECKPOINT for x in "ab")
        assert one.read_bytes() == two.read_bytes()
        assert a.done == b.done == 4 and len(a.shards) == threads


def test_plan_refuses_more_threads_than_envs(tmp_path):
    from policylab.errors import BadInput

    with pytest.raises(BadInput) as err:
        tiny(tmp_path, threads=9)
    assert err.value.field == "threads"


def test_plan_refuses_a_minibatch_larger_than_a_rollout(tmp_path):
    from policylab.errors import BadInput

    with pytest.raises(BadInput) as err:
        tiny(tmp_path, minibatch=1024)
    assert err.value.field == "minibatch"


def test_a_named_recipe_is_its_options_and_refuses_other_values_of_them(tmp_path, capsys):
    from policylab.studies.breakout.requests import LEARN_DEFAULTS, RECIPES

    sets = RECIPES["v5"]
    named = plan(validated(LearnRequest, {"out": tmp_path / "a", "recipe": "v5"}))
    spelled = plan(validated(LearnRequest, {"out": tmp_path / "a", **sets}))
    assert named.config == spelled.config  # one run: the folder of either resumes under the other
    assert (named.req.hidden, named.req.max_steps, named.req.sticky) == (128, 27_000, 0.25)
    assert "recipe" not in named.config and named.config["late_score"] == 220
    plain = validated(LearnRequest, {"out": tmp_path / "a"})
    assert {k: getattr(plain, k) for k in LEARN_DEFAULTS} == LEARN_DEFAULTS and plain.protocol is None
    assert validated(LearnRequest, {"out": tmp_path / "a", "recipe": "v5", "hidden": 128}).hidden == 128
    for field, value in (("hidden", 64), ("late_starts", 0.0), ("late_score", 300), ("gap_episodes", 100)):
        out = tmp_path / field
        assert (
            invoke(
                ["breakout", "learn", "--out", str(out), "--recipe", "v5", f"--{field.replace('_', '-')}", str(value)]
            )
            == 2
        )
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"policylab: error: {field}: --recipe v5 sets"), err
        assert not out.exists()


@pytest.mark.skipif(chromium_path() is None, reason="Chromium not installed (make setup installs it)")
def test_learn_command_validates_on_the_exact_shadow_and_ale_and_its_report_renders(tmp_path):
    out = tmp_path / "learn"
    args = [f"--{k.replace('_', '-')}={v}" for k, v in {**TINY, "validate_episodes": 2, "exact_episodes": 4}.items()]
    assert invoke(["breakout", "learn", "--out", str(out), *args, "--gap-episodes", "2", "--executor", "local"]) == 0
    data = json.loads((out / "learn.json").read_text())
    assert data["updates"] == 4 and len(data["curves"]["entropy"]) == 4
    assert data["validation"]["transfer_gap"]["episodes"] == 2
    v = data["validation"]["validation"]
    assert v["episodes"] == 4 and (v["ale_confirmation"]["equal"], v["ale_confirmation"]["of"]) == (2, 2)
    assert (out / "policy.onnx").is_file()
    assert json.loads((out / "wallclock.json").read_text())["wall_seconds"] > 0  # the one non-deterministic file
    seen = render_check(out / "report.html")
    assert seen["images"] == 2 and seen["loaded"] == 2
    assert blank_tiles(seen["tiles"]) == [], seen["tiles"]  # the ratio tiles were blank where ALE scored 0
    html = (out / "report.html").read_text()
    assert "Transfer gap" in html and 'href="learn.json"' in html
    # the same command again: nothing to learn, same network bytes
    before = (out / "policy.onnx").read_bytes()
    assert invoke(["breakout", "learn", "--out", str(out), *args, "--gap-episodes", "2", "--executor", "local"]) == 0
    assert (out / "policy.onnx").read_bytes() == before
