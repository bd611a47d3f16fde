"""The one network form this project writes, for every network it makes: an MLP as an ONNX file.

Gemm layers (transB=1, torch's ``nn.Linear``) on float32 weights, Relu or Tanh between, a symbolic batch;
bytes a function of the weights alone, recognised by `project` (docs/design.md, "Vocabulary")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from policylab.errors import BadInput

ACTIVATIONS = {"tanh": "Tanh", "relu": "Relu"}  # the learner's activation -> the ONNX operator
KERNEL_ACTIVATION = {"tanh": 1, "relu": 2}  # -> `portable_math.dense`'s code
OPSET, IR_VERSION = 17, 8  # onnx 1.23 writes IR 8 for opset 17; onnxruntime 1.32 reads both
ROBOT_INPUT, ROBOT_OUTPUT, ROBOT_GRAPH = "obs", "actions", "policylab_mlp"
# metadata_props keys naming the robot a network was trained on (`robot_metadata`; `policies.files.named_robot`)
ROBOT_META, ROBOT_SPEC_META = "policylab.robot", "policylab.robot_spec_sha256"

Layers = Sequence[tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class MlpLayers:
    """A network in the form `mlp_bytes` writes, as float64 arrays for `portable_math.dense`: (W.T, b)
    per layer and the activation between layers (1 tanh, 2 relu). The outputs are the network's,
    rounded once per operation in a fixed order."""

    layers: tuple[tuple[np.ndarray, np.ndarray], ...]
    activation: int

    @property
    def in_dim(self) -> int:
        return self.layers[0][0].shape[0]

    @property
    def out_dim(self) -> int:
        return self.layers[-1][0].shape[1]

    def forward(self, obs: np.ndarray) -> np.ndarray:
        """(N, in) observations -> (N, out) float64 outputs. The observations are first rounded to
        float32, the file's input type (a no-op for float32 ones), as onnxruntime would."""
        from policylab.portable_math import dense

        x = np.ascontiguousarray(np.asarray(obs, dtype=np.float32), dtype=np.float64)
        last = len(self.layers) - 1
        for i, (w_t, b) in enumerate(self.layers):
            x = dense(x, w_t, b, 0 if i == last else self.activation)
        return x


def _checked(layers: Layers) -> list[tuple[np.ndarray, np.ndarray]]:
    """The layers as float32 arrays, each taking the previous one's outputs (`BadInput` otherwise)."""
    if not layers:
        raise BadInput("layers", "an MLP needs at least one layer")
    out, width = [], None
    for i, (w, b) in enumerate(layers):
        w = np.asarray(w, dtype=np.float32)
        b = np.asarray(b, dtype=np.float32)
        if w.ndim != 2 or b.shape != (w.shape[0],) or (width is not None and w.shape[1] != width):
            takes = "form a layer" if width is None else f"take the previous layer's {width} outputs"
            raise BadInput(f"layers[{i}]", f"weight {w.shape} and bias {b.shape} do not {takes}")
        width = w.shape[0]
        out.append((w, b))
    return out


def mlp_bytes(
    layers: Layers,
    activation: str,
    *,
    input_name: str,
    output_name: str,
    graph_name: str,
    metadata: Mapping[str, str] | None = None,
) -> bytes:
    """The ONNX bytes of an MLP: `layers` are (weight (out, in), bias (out,)) pairs in torch's
    `nn.Linear` layout, each one Gemm, `activation` ("relu" or "tanh") between consecutive layers; the
    batch dimension is symbolic; `metadata` (key -> value, in its order) is written into the file."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    if activation not in ACTIVATIONS:
        raise BadInput("activation", f"must be one of {', '.join(ACTIVATIONS)}, got {activation!r}")
    checked = _checked(layers)
    nodes, inits, x = [], [], input_name
    for i, (w, b) in enumerate(checked):
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        last = i == len(checked) - 1
        y = output_name if last else f"h{i}"
        nodes.append(helper.make_node("Gemm", [x, f"w{i}", f"b{i}"], [y], transB=1))
        if not last:
            nodes.append(helper.make_node(ACTIVATIONS[activation], [y], [f"a{i}"]))
            y = f"a{i}"
        x = y
    graph = helper.make_graph(
        nodes,
        graph_name,
        [helper.make_tensor_value_info(input_name, TensorProto.FLOAT, ["batch", checked[0][0].shape[1]])],
        [helper.make_tensor_value_info(output_name, TensorProto.FLOAT, ["batch", checked[-1][0].shape[0]])],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION, producer_name="policylab"
    )
    for key, value in (metadata or {}).items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.checker.check_model(model)
    return model.SerializeToString()


def project(raw: bytes) -> MlpLayers | None:
    """The layers of `raw` in float64 when it is exactly the file `mlp_bytes` writes for its own
    weights, activation, names and metadata (rebuilt and compared byte for byte, so nothing else in
    the file can change what it computes); None for any other ONNX file."""
    import onnx
    from onnx import numpy_helper

    try:
        model = onnx.load_from_string(raw)
        g = model.graph
        gemms = [n for n in g.node if n.op_type == "Gemm"]
        acts = {n.op_type for n in g.node if n.op_type != "Gemm"}
        names = {v: k for k, v in ACTIVATIONS.items()}
        if not gemms or len(acts) > 1 or not acts <= set(names) or len(g.input) != 1 or len(g.output) != 1:
            return None
        activation = names[acts.pop()] if acts else "tanh"  # one layer: no activation, the same bytes
        inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
        layers = [(inits[f"w{i}"], inits[f"b{i}"]) for i in range(len(gemms))]
        meta = {m.key: m.value for m in model.metadata_props}
        if (
            mlp_bytes(
                layers,
                activation,
                input_name=g.input[0].name,
                output_name=g.output[0].name,
                graph_name=g.name,
                metadata=meta,
            )
            != raw
        ):
            return None
    except Exception:  # not ONNX, missing weights, bad shapes: not this form
        return None
    return MlpLayers(
        tuple((np.ascontiguousarray(w.T, dtype=np.float64), b.astype(np.float64)) for w, b in layers),
        KERNEL_ACTIVATION[activation],
    )


def robot_metadata(identity: Mapping[str, str]) -> dict[str, str]:
    """The metadata that names the robot a network was trained on, from the robot's identity (its name and
    its spec file's sha256): a boundary command given the file without ``--robot`` plays it on that robot,
    and refuses another (`studies.boundary.checkpoint`)."""
    return {ROBOT_META: identity["name"], ROBOT_SPEC_META: identity["spec_sha256"]}


def export_robot_policy(
    layers: Layers, path: str | Path, activation: str = "relu", metadata: Mapping[str, str] | None = None
) -> Path:
    """Write a robot's policy network to `path` (atomically): input "obs" (batch, obs_dim) float32,
    output "actions" (batch, act_dim), `layers` in `nn.Linear` layout (e.g. a `GaussianActorCritic`'s
    `actor_layers()`: the input affine folded in, the output the action mean), `metadata` (e.g.
    `robot_metadata`) in the file; without it the bytes are those of a file exported before the robot was
    written into it. `policies.files.load_policy` recognises the file and acts through the CPU-independent
    kernel."""
    from policylab.fileio import atomic_write_bytes

    raw = mlp_bytes(
        layers, activation, input_name=ROBOT_INPUT, output_name=ROBOT_OUTPUT, graph_name=ROBOT_GRAPH, metadata=metadata
    )
    atomic_write_bytes(Path(path), raw)
    return Path(path)
