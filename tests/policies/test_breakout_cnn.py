"""Pixel (CNN) network files: the metadata that names their preprocessing, the checks that refuse a bad file in
one line, the SB3 export recipe, and onnxruntime's logits as torch computes them, whatever the batch."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
import torch

from policylab.errors import BadInput
from policylab.policies.breakout_cnn import PIXEL_METADATA_KEY, PixelSpec, export_sb3, stamp
from policylab.policies.breakout_net import OBS_METADATA_KEY, read
from tests.support.breakout_nets import export_cnn, torch_cnn
from tests.support.paths import ROOT

TEST_CNN = ROOT / "tests" / "data" / "breakout_cnn_ppo.onnx"


def _frames(n: int, seed: int = 0) -> np.ndarray:
    """Real preprocessed frames: `n` observations of the exact shadow's vector env under random actions."""
    from policylab.envs.breakout.vector import BreakoutVectorEnv

    env = BreakoutVectorEnv(8)
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    out = [obs]
    while sum(len(o) for o in out) < n:
        obs, *_ = env.step(rng.integers(0, 4, 8))
        out.append(obs)
    return np.concatenate(out)[:n]


def test_the_spec_round_trips_and_names_a_wrong_field():
    spec = PixelSpec()
    assert PixelSpec.from_json(spec.to_json()) == spec
    assert spec.record == {
        "kind": "pixels",
        "height": 84,
        "width": 84,
        "stack": 4,
        "grayscale": True,
        "maxpool": True,
        "frameskip": 4,
        "noop_max": 30,
        "fire_reset": True,
        "actions": ["NOOP", "FIRE", "RIGHT", "LEFT"],
    }
    data = json.loads(spec.to_json())
    for change, field in (
        ({"grayscale": False}, "grayscale"),
        ({"actions": ["NOOP", "FIRE"]}, "actions"),
        ({"height": 300}, "height"),
        ({"stack": 0}, "stack"),
    ):
        with pytest.raises(BadInput) as err:
            PixelSpec.from_json(json.dumps({**data, **change}))
        assert err.value.field == f"{PIXEL_METADATA_KEY}.{field}"
    with pytest.raises(BadInput, match="lacks frameskip"):
        PixelSpec.from_json(json.dumps({k: v for k, v in data.items() if k != "frameskip"}))
    with pytest.raises(BadInput, match="unknown fields colour"):
        PixelSpec.from_json(json.dumps({**data, "colour": 1}))
    with pytest.raises(BadInput, match="is not JSON"):
        PixelSpec.from_json("{84x84")


def test_a_cnn_file_acts_as_torch_and_alike_in_any_batch(tmp_path):
    """onnxruntime's logits are torch's within float32 rounding, and the same bits for a row alone or in a
    batch of any size (so a seed's actions do not depend on the seeds it was batched with)."""
    net = torch_cnn(0)
    export_cnn(net, tmp_path / "cnn.onnx", PixelSpec())
    f = read(tmp_path / "cnn.onnx")
    assert f.pixels and f.spec == PixelSpec() and f.record["observation"]["kind"] == "pixels"
    policy = f.policy()
    obs = _frames(96)
    with torch.no_grad():
        want = net(torch.from_numpy(obs)).numpy()
    got = policy.logits(obs)
    assert np.abs(got - want).max() <= 1e-4 * max(1.0, np.abs(want).max())
    assert len(set(policy.act(obs).tolist())) >= 2, "the test network uses several actions"
    rows = np.concatenate([policy.logits(obs[i : i + 1]) for i in range(len(obs))])
    assert np.array_equal(rows, got)
    for cut in (7, 33, 64):
        assert np.array_equal(np.concatenate([policy.logits(obs[:cut]), policy.logits(obs[cut:])]), got)


def test_sb3_export_recipe_gives_the_policy_heads_logits(tmp_path):
    """`export_sb3` on an SB3 PPO CnnPolicy (float or uint8 input): the file's logits are the policy's action
    distribution's, and its greedy action is SB3's deterministic `predict`."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecFrameStack

    from policylab.envs.breakout.sb3 import make_atari_env

    torch.manual_seed(0)
    env = VecFrameStack(make_atari_env("BreakoutNoFrameskip-v4", n_envs=2, seed=0), n_stack=4)
    model = PPO("CnnPolicy", env, n_steps=8, batch_size=8, device="cpu", seed=0)
    obs = _frames(32, seed=1)
    with torch.no_grad():
        dist = model.policy.get_distribution(torch.from_numpy(obs).float())
        want = dist.distribution.logits.numpy()
    sb3_actions, _ = model.predict(obs, deterministic=True)
    for uint8 in (False, True):
        path = export_sb3(model.policy, tmp_path / f"sb3_{uint8}.onnx", uint8=uint8)
        policy = read(path).policy()
        got = policy.logits(obs)
        # the file's logits are un-normalised; SB3's are log-softmax: equal up to a per-row constant
        got_log = (
            got - np.log(np.exp(got - got.max(1, keepdims=True)).sum(1, keepdims=True)) - got.max(1, keepdims=True)
        )
        assert np.abs(got_log - want).max() < 1e-4
        assert (policy.act(obs) == sb3_actions).all()


def test_stamp_replaces_an_earlier_stamp(tmp_path):
    export_cnn(torch_cnn(1), tmp_path / "a.onnx", PixelSpec())
    model = onnx.load(tmp_path / "a.onnx")
    stamp(model, PixelSpec(noop_max=0))
    assert [m.key for m in model.metadata_props].count(PIXEL_METADATA_KEY) == 1
    onnx.save(model, tmp_path / "b.onnx")
    assert read(tmp_path / "b.onnx").spec.noop_max == 0


def _one_line(path) -> str:
    with pytest.raises(BadInput) as err:
        read(path)
    assert err.value.field == "policy" and "\n" not in err.value.message
    return err.value.message


def test_a_bad_cnn_file_is_named_in_one_line(tmp_path):
    export_cnn(torch_cnn(2), tmp_path / "bare.onnx")  # no metadata
    assert f"no {OBS_METADATA_KEY!r} (features) or {PIXEL_METADATA_KEY!r} (pixels) metadata" in _one_line(
        tmp_path / "bare.onnx"
    )
    model = onnx.load(tmp_path / "bare.onnx")
    stamp(model, PixelSpec(stack=3))  # the net takes 4 frames
    onnx.save(model, tmp_path / "three.onnx")
    msg = _one_line(tmp_path / "three.onnx")
    assert "input 'obs' has shape (batch, 4, 84, 84)" in msg and "(batch, 3, 84, 84)" in msg
    export_cnn(torch_cnn(3, size=64), tmp_path / "small.onnx", PixelSpec(), size=64)
    assert "(batch, 4, 64, 64)" in _one_line(tmp_path / "small.onnx")
    entry = model.metadata_props.add()
    entry.key, entry.value = OBS_METADATA_KEY, '{"history": 1, "wall": false}'
    onnx.save(model, tmp_path / "both.onnx")
    assert "keep one" in _one_line(tmp_path / "both.onnx")


def test_the_committed_test_cnn_is_a_small_stamped_sb3_export():
    f = read(TEST_CNN)
    assert f.pixels and f.spec == PixelSpec()
    assert TEST_CNN.stat().st_size < 2_000_000
    assert len(set(f.policy().act(_frames(256, seed=2)).tolist())) >= 2
