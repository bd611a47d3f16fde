"""Pixel (CNN) agents played through the Atari vector envs: on fresh seeds the exact shadow's episodes are ALE's
(ale-py's `AtariVectorEnv`), action for action and score for score; `eval`, `transfer` and `train --baseline`
take such a file on the exact shadow with the ALE confirmation, and refuse it elsewhere in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from policylab.cli import invoke
from policylab.envs.breakout.ale import Protocol
from policylab.envs.breakout.contract import FIRE, NOOP
from policylab.envs.breakout.params import load_preset
from policylab.policies.breakout_cnn import PixelSpec
from policylab.policies.breakout_net import read
from policylab.rollout.seeds import named_range
from policylab.studies.breakout.episodes import pixels
from policylab.studies.breakout.episodes.runner import EpisodeTask, protocol_of, run_shadow_group, run_task
from tests.support.breakout_nets import export_cnn, torch_cnn
from tests.support.paths import ROOT

TEST_CNN = ROOT / "tests" / "data" / "breakout_cnn_ppo.onnx"
SEEDS = named_range("breakout", "pixels").first(40)
STEPS = 300  # agent steps of the CLI tests' episodes


def cli(*args) -> int:
    return invoke(["breakout", *map(str, args)])


@pytest.fixture(scope="module")
def random_cnn(tmp_path_factory):
    path = tmp_path_factory.mktemp("cnn") / "random_cnn.onnx"
    export_cnn(torch_cnn(7), path, PixelSpec(), uint8=True)
    return path


def _both(network, seeds, protocol: dict) -> tuple[list, list]:
    """The seeds' episodes on the exact shadow (one batch) and on ALE (one ale-py game each)."""
    shadow = load_preset("ale-exact", sticky_prob=protocol["sticky"])
    sh = run_shadow_group([EpisodeTask("shadow", tuple(seeds), network.name, {}, protocol, shadow, network=network)])
    ale = run_task(EpisodeTask("ale", tuple(seeds), network.name, {}, protocol, network=network))
    return sh[0], ale


def _assert_lockstep(shadow_eps, ale_eps) -> None:
    for a, b in zip(shadow_eps, ale_eps):
        assert a.seed == b.seed and a.outcome == b.outcome, (a.seed, a.outcome, b.outcome)
        assert a.payload.keys() == b.payload.keys() == {"action", "policy_action", "reward", "lives"}
        for k in a.payload:
            assert np.array_equal(a.payload[k], b.payload[k]), (a.seed, k)


def test_the_test_cnn_plays_ale_episodes_on_the_exact_shadow():
    """The committed PPO CNN (benchmarks/train_pixel_test_cnn.py) on 24 fresh seeds, full games with ALE's
    default sticky actions: every seed's actions, rewards, lives and outcome equal ALE's; it scores above a
    policy that never moves (NOOP after the serve scores 0 or near it)."""
    network = read(TEST_CNN)
    protocol = Protocol(max_steps=2000).model_dump()
    shadow_eps, ale_eps = _both(network, SEEDS[:24], protocol)
    _assert_lockstep(shadow_eps, ale_eps)
    scores = [e.outcome["score"] for e in ale_eps]
    assert np.mean(scores) > 3.0, scores
    assert sum(e.outcome["done"] for e in ale_eps) >= 12, "most games end with the lives out"
    assert len({int(a) for e in ale_eps for a in e.payload["policy_action"]}) >= 2


def test_a_random_cnn_plays_alike_without_sticky_actions_and_one_serve(random_cnn):
    """A random-weight CNN taking uint8 frames, no sticky actions, serve=never: ALE's episodes again."""
    protocol = Protocol(max_steps=600, sticky=0.0, serve="never").model_dump()
    shadow_eps, ale_eps = _both(read(random_cnn), SEEDS[24:32], protocol)
    _assert_lockstep(shadow_eps, ale_eps)
    assert all((e.payload["action"][1:] != FIRE).all() for e in ale_eps), "never: one serve, then no FIRE"


def test_an_episode_is_the_same_alone_or_in_a_batch():
    network = read(TEST_CNN)
    protocol = Protocol(max_steps=400).model_dump()
    shadow = load_preset("ale-exact")
    batch = run_shadow_group([EpisodeTask("shadow", SEEDS[32:38], "n", {}, protocol, shadow, network=network)])[0]
    alone = run_shadow_group([EpisodeTask("shadow", SEEDS[35:36], "n", {}, protocol, shadow, network=network)])[0]
    assert alone[0].outcome == batch[3].outcome
    assert all(np.array_equal(alone[0].payload[k], batch[3].payload[k]) for k in alone[0].payload)


def test_the_serve_rule_acts_on_the_lives():
    acts = np.array([FIRE, 2, 3, NOOP])
    lost = np.array([False, True, False, False])
    assert pixels.serve(acts, True, lost, "auto").tolist() == [FIRE] * 4
    assert pixels.serve(acts, False, lost, "auto").tolist() == [FIRE, FIRE, 3, NOOP]
    assert pixels.serve(acts, True, lost, "never").tolist() == [FIRE] * 4
    assert pixels.serve(acts, False, lost, "never").tolist() == [NOOP, 2, 3, NOOP]


def test_a_pixel_task_keys_its_env_and_needs_the_exact_model(random_cnn):
    network = read(random_cnn)
    protocol = Protocol().model_dump()
    with pytest.raises(ValueError, match="exact shadow"):
        EpisodeTask("shadow", (1,), "n", {}, protocol, load_preset("atari-cal"), network=network)
    task = EpisodeTask("shadow", (1,), "n", {}, protocol, load_preset("ale-exact"), network=network)
    assert protocol_of(task)["agent_env"] == pixels.PIXEL_RULES
    assert task.policy_record["network"]["observation"]["kind"] == "pixels"


def test_eval_plays_a_cnn_on_both_envs_with_the_same_scores(tmp_path):
    for env in ("shadow", "ale"):
        extra = ["--preset", "ale-exact"] if env == "shadow" else []
        argv = ["eval", "--env", env, "--policy", TEST_CNN, "--episodes", 3, "--max-steps", STEPS, "--replays", 1]
        assert cli(*argv, *extra, "--seed", SEEDS[0], "--out", tmp_path / env) == 0
    a, b = (json.loads((tmp_path / env / "report.json").read_text()) for env in ("shadow", "ale"))
    assert [r["score"] for r in a["episodes"]] == [r["score"] for r in b["episodes"]]
    assert a["objective"]["network"] == read(TEST_CNN).record
    replay = (tmp_path / "ale" / "replays" / f"ep000_seed{SEEDS[0]}.jsonl").read_text().splitlines()
    assert set(json.loads(replay[0])) == {"step", "action", "policy_action", "reward", "lives"}
    assert len(replay) == b["episodes"][0]["steps"]


def test_transfer_validates_a_cnn_with_the_ale_confirmation(tmp_path):
    argv = ["transfer", "--policy", TEST_CNN, "--preset", "ale-exact", "--episodes", 3, "--gap-episodes", 3]
    assert cli(*argv, "--exact-episodes", 6, "--max-steps", STEPS, "--out", tmp_path / "t") == 0
    data = json.loads((tmp_path / "t" / "transfer.json").read_text())
    conf = data["validation"]["ale_confirmation"]
    assert conf["of"] == 3 and conf["equal"] == 3
    assert data["validation"]["episodes"] == 6 and set(data["validation"]["comparisons"]) == {"v3", "pick"}


def test_train_takes_a_cnn_baseline_on_the_exact_shadow(tmp_path):
    argv = ["train", "--baseline", TEST_CNN, "--preset", "ale-exact", "--search-seeds", 1, "--rounds", 1]
    argv += ["--validate-episodes", 2, "--exact-episodes", 4, "--max-steps", STEPS, "--no-video"]
    assert cli(*argv, "--out", tmp_path / "train") == 0
    train = json.loads((tmp_path / "train" / "report.json").read_text())
    assert train["objective"]["baseline_network"] == read(TEST_CNN).record
    conf = train["evaluation"]["ale_confirmation"]
    assert conf["of"] == 2 and conf["equal"] == 2, conf["rows"]
    assert [r["baseline_ale"] for r in conf["rows"]] == [r["baseline_shadow"] for r in conf["rows"]]


@pytest.mark.parametrize(
    "argv, field",
    [
        (["eval", "--env", "shadow", "--preset", "atari-cal"], "preset"),
        (["eval", "--env", "shadow", "--preset", "ale-exact", "--video"], "video"),
        (["transfer", "--preset", "atari-cal"], "preset"),
        (["audit"], "policy"),
    ],
)
def test_a_cnn_where_it_cannot_play_is_one_line_exit_2_nothing_written(tmp_path, capsys, argv, field):
    out = tmp_path / "out"
    assert cli(*argv, "--policy", TEST_CNN, "--episodes", 1, "--out", out) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"policylab: error: {field}: "), err
    assert not out.exists()


def test_train_takes_a_cnn_baseline_validated_on_ale(tmp_path):
    """A physics preset validates on ALE, where a CNN plays through ale-py's own env: the plan takes it."""
    from policylab.studies.breakout.requests import TrainRequest
    from policylab.studies.breakout.search import train

    p = train.plan(TrainRequest(baseline=str(TEST_CNN), preset="atari-cal", out=tmp_path / "o"))
    assert p.baseline.network.pixels and not p.exact
