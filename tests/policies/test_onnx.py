"""The one ONNX loader on files as other tools export them: a fixed batch of 1, several outputs (the
action output named), external data (a true message), and the sizes a robot gives."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from policylab.errors import BadInput
from policylab.policies import onnx as onnx_policy


def _net(path, *, batch="batch", outputs=("act",), external=False):
    """A 4 -> 2 linear network; a second output is the negated action (a stand-in critic head)."""
    w = np.arange(8, dtype=np.float32).reshape(4, 2) / 10
    nodes = [helper.make_node("MatMul", ["obs", "w"], ["act"])]
    if len(outputs) > 1:
        nodes.append(helper.make_node("Neg", ["act"], [outputs[1]]))
    graph = helper.make_graph(
        nodes,
        "net",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, [batch, 4])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, [batch, 2]) for o in outputs],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    if external:
        onnx.save(
            model,
            str(path),
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location="w.bin",
            size_threshold=0,
        )
    else:
        path.write_bytes(model.SerializeToString())
    return path


def test_fixed_batch_one_runs_row_by_row(tmp_path):
    one = onnx_policy.load(_net(tmp_path / "one.onnx", batch=1), 4, 2)
    many = onnx_policy.load(_net(tmp_path / "many.onnx"), 4, 2)
    x = np.random.default_rng(3).standard_normal((7, 4))
    assert one.batch_one and not many.batch_one
    assert np.array_equal(one.act(x), many.act(x))
    with pytest.raises(BadInput, match="fixed batch of 3; a policy takes a batch of 1 or a symbolic batch"):
        onnx_policy.load(_net(tmp_path / "three.onnx", batch=3), 4, 2)


def test_several_outputs_need_the_action_output_by_name(tmp_path):
    path = _net(tmp_path / "ac.onnx", outputs=("act", "value"))
    with pytest.raises(BadInput) as e:
        onnx_policy.load(path, 4, 2)
    assert e.value.message.endswith("has 2 outputs (act, value); name the action output (a robot spec's policy_output)")
    with pytest.raises(BadInput, match=r"has no output named 'mu' \(its outputs: act, value\)"):
        onnx_policy.load(path, 4, 2, output="mu")
    x = np.ones((3, 4))
    act = onnx_policy.load(path, 4, 2, output="act")
    value = onnx_policy.load(path, 4, 2, output="value")
    assert np.array_equal(act.act(x), -value.act(x))


def test_external_data_is_refused_with_how_to_make_one_file(tmp_path):
    path = _net(tmp_path / "ext.onnx", external=True)
    assert (tmp_path / "w.bin").is_file()
    with pytest.raises(BadInput) as e:
        onnx_policy.load(path, 4, 2)
    assert e.value.field == "checkpoint"
    assert e.value.message == (
        f"{path} keeps its weights in an external data file ('w.bin'); save the network as one "
        "file: onnx.save(onnx.load(PATH), NEW_PATH, save_as_external_data=False)"
    )
    whole = tmp_path / "whole.onnx"
    onnx.save(onnx.load(str(path)), str(whole), save_as_external_data=False)  # the recipe the message gives
    assert onnx_policy.load(whole, 4, 2).act(np.ones((1, 4))).shape == (1, 2)
