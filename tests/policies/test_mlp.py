"""The project's one network form (`policies.mlp`) through the robot door (`policies.files.load_policy`):
a Go1 actor exported here acts through the portable float64 kernel, the same rows alone or batched,
bit for bit the kernel's own layers and within float32 rounding of onnxruntime and torch; any other
file (a user's) acts through onnxruntime as before."""

from __future__ import annotations

import pickle

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from policylab.envs.robots.robot import robot
from policylab.errors import BadInput
from policylab.learning.network import GaussianActorCritic
from policylab.policies import mlp
from policylab.policies.files import load_policy
from policylab.portable_math import dense

KERNEL = {"relu": 2, "tanh": 1}


@pytest.fixture(scope="module")
def go1():
    rob = robot("go1_imu")
    assert (rob.obs_dim, rob.act_dim) == (48, 12)
    return rob


def actor(activation: str) -> GaussianActorCritic:
    """A Go1 actor-critic as the learner builds it, with a non-trivial input affine and its last actor
    layer scaled up from its near-zero start (so the actions are of the size a trained one gives)."""
    rng = np.random.default_rng(4)
    shift = rng.normal(0, 0.5, 52).astype(np.float32)
    scale = rng.uniform(0.05, 2.0, 52).astype(np.float32)
    torch.manual_seed(9)
    net = GaussianActorCritic(48, 52, 12, [64, 32], [32], activation, shift, scale, -0.5)
    with torch.no_grad():
        net.actor[-1].weight.mul_(100.0)
        for m in net.actor:
            if isinstance(m, torch.nn.Linear):
                m.bias.uniform_(-0.3, 0.3)
    return net


def observations(n: int) -> np.ndarray:
    """float64 observations, most not float32 numbers (the door rounds them to the file's float32)."""
    return np.random.default_rng(1).normal(0, 1.5, (n, 48))


def load(path, rob):
    return load_policy(path, rob.obs_dim, rob.act_dim, what="the go1_imu robot", output=rob.spec.policy_output)


@pytest.mark.parametrize("activation", ["relu", "tanh"])
def test_an_exported_go1_actor_acts_through_the_portable_kernel(activation, go1, tmp_path):
    net = actor(activation)
    layers = net.actor_layers()
    path = mlp.export_robot_policy(layers, tmp_path / "go1.onnx", activation=activation)
    policy = load(path, go1)
    assert policy.mlp is not None, "a file this project writes acts through the CPU-independent kernel"
    obs = observations(300)
    acts = policy.act(obs)
    assert acts.shape == (300, 12) and acts.dtype == np.float64 and np.abs(acts).max() > 0.5

    rows = np.concatenate([policy.act(obs[i : i + 1]) for i in range(len(obs))])
    assert np.array_equal(acts, rows), "a row's actions do not depend on its batch"
    assert np.array_equal(acts[::-1], policy.act(obs[::-1]))
    assert np.array_equal(acts[:7], policy.act(obs[:7]))

    x = obs.astype(np.float32).astype(np.float64)  # the file's input type, exact in float64
    for i, (w, b) in enumerate(layers):
        x = dense(
            x,
            np.ascontiguousarray(w.T, dtype=np.float64),
            b.astype(np.float64),
            0 if i == len(layers) - 1 else KERNEL[activation],
        )
    assert np.array_equal(acts, x), "the door's rows are the kernel's own, bit for bit"

    # onnxruntime and torch compute in float32 (torch before folding the affine): within its rounding
    ort = policy.onnxruntime(obs)
    assert np.abs(ort - acts).max() <= 1e-5 * max(1.0, np.abs(acts).max())
    with torch.no_grad():
        mean, _ = net(net.normalise(np.concatenate([obs, np.zeros((300, 4))], 1).astype(np.float32)))
    assert np.abs(mean.numpy() - acts).max() <= 1e-4 * max(1.0, np.abs(acts).max())

    again = pickle.loads(pickle.dumps(policy))  # a sweep's worker process reopens the file
    assert again.mlp is not None and np.array_equal(again.act(obs), acts)


def test_the_bytes_are_the_weights_and_the_form_is_recognised_exactly(tmp_path):
    layers = actor("relu").actor_layers()
    raw = mlp.export_robot_policy(layers, tmp_path / "a.onnx").read_bytes()
    assert mlp.export_robot_policy(layers, tmp_path / "b.onnx").read_bytes() == raw
    projected = mlp.project(raw)
    assert projected.activation == 2 and (projected.in_dim, projected.out_dim) == (48, 12)
    for (w_t, b), (w, b32) in zip(projected.layers, layers):
        assert np.array_equal(w_t, w.T) and np.array_equal(b, b32)
    model = onnx.load_from_string(raw)
    model.doc_string = "edited"
    assert mlp.project(model.SerializeToString()) is None, "anything beyond the form: not recognised"
    assert mlp.project(b"not onnx") is None
    with pytest.raises(BadInput, match=r"layers\[1\]"):
        mlp.mlp_bytes([layers[0], layers[2]], "relu", input_name="obs", output_name="actions", graph_name="g")
    with pytest.raises(BadInput, match="activation"):
        mlp.export_robot_policy(layers, tmp_path / "c.onnx", activation="gelu")
    assert not (tmp_path / "c.onnx").exists()


def _user_file(path, layers, batch) -> None:
    """The same network as another exporter writes it: MatMul + Add + Relu, weights as (in, out)."""
    nodes, inits, x = [], [], "input"
    for i, (w, b) in enumerate(layers):
        inits += [numpy_helper.from_array(np.ascontiguousarray(w.T), f"W{i}"), numpy_helper.from_array(b, f"B{i}")]
        nodes += [
            helper.make_node("MatMul", [x, f"W{i}"], [f"m{i}"]),
            helper.make_node("Add", [f"m{i}", f"B{i}"], [f"y{i}"]),
        ]
        x = f"y{i}"
        if i < len(layers) - 1:
            nodes.append(helper.make_node("Relu", [x], [f"r{i}"]))
            x = f"r{i}"
    graph = helper.make_graph(
        nodes,
        "user",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 48])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [batch, 12])],
        inits,
    )
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())


@pytest.mark.parametrize("batch", ["N", 1])
def test_a_users_file_still_acts_through_onnxruntime(batch, go1, tmp_path):
    layers = actor("relu").actor_layers()
    _user_file(tmp_path / "user.onnx", layers, batch)
    policy = load(tmp_path / "user.onnx", go1)
    assert policy.mlp is None and policy.batch_one == (batch == 1)
    obs = observations(50)
    assert np.array_equal(policy.act(obs), policy.onnxruntime(obs))
    ours = load(mlp.export_robot_policy(layers, tmp_path / "ours.onnx"), go1)
    assert np.abs(policy.act(obs) - ours.act(obs)).max() <= 1e-5 * max(1.0, np.abs(ours.act(obs)).max())
