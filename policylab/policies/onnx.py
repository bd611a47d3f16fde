"""ONNX policy files: the one ONNX loader of the project, for the robots' policies and Breakout's.

The project's own form acts through `portable_math.dense`, any other file through onnxruntime on one thread;
checks and determinism: docs/boundary.md, "Policies are files", and docs/design.md, "Module notes"."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime

from policylab.errors import BadInput
from policylab.policies.mlp import MlpLayers, project

_FLOAT_TYPES = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.DOUBLE: np.float64}
_IMAGE_TYPES = {**_FLOAT_TYPES, onnx.TensorProto.UINT8: np.uint8}  # an image network may take raw bytes


def _dims(value_info) -> list:
    shape = value_info.type.tensor_type.shape
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in shape.dim]


@dataclass
class OnnxPolicy:
    path: Path
    session: onnxruntime.InferenceSession
    input_name: str
    input_dtype: type
    obs_dim: int
    act_dim: int
    output_name: str | None = None  # None: the file's one output
    batch_one: bool = False  # the input's batch dimension is fixed at 1: run row by row
    mlp: MlpLayers | None = None  # the file is in the project's network form: act through the portable kernel
    obs_shape: tuple[int, ...] | None = None  # an image network's input shape after the batch (None: (obs_dim,))

    def act(self, obs: np.ndarray) -> np.ndarray:
        """(B, obs_dim) float -> (B, act_dim) float64 actions (the network's output, unclipped): through
        `portable_math.dense` for a file in the project's form, through onnxruntime otherwise."""
        if self.mlp is not None:
            return self.mlp.forward(obs) if len(obs) else np.zeros((0, self.act_dim))
        return self.onnxruntime(obs)

    def onnxruntime(self, obs: np.ndarray) -> np.ndarray:
        """`act` as onnxruntime computes it with its own kernels, whatever the file's form (for
        comparisons: within float32 rounding of the portable kernel's result)."""
        x = np.ascontiguousarray(obs, dtype=self.input_dtype)
        if len(x) == 0:
            return np.zeros((0, self.act_dim))
        if self.batch_one:
            return np.concatenate([self._run(x[i : i + 1]) for i in range(len(x))])
        return self._run(x)

    def _run(self, x: np.ndarray) -> np.ndarray:
        outputs = None if self.output_name is None else [self.output_name]
        return np.asarray(self.session.run(outputs, {self.input_name: x})[0], dtype=np.float64)

    def __getstate__(self):  # sessions do not pickle; a worker process re-opens the file
        return {
            "path": self.path,
            "obs_dim": self.obs_dim,
            "act_dim": self.act_dim,
            "output_name": self.output_name,
            "obs_shape": self.obs_shape,
        }

    def __setstate__(self, state):
        shape = state.get("obs_shape")
        dim = None if shape is not None else state["obs_dim"]
        self.__dict__.update(
            load(state["path"], dim, state["act_dim"], output=state.get("output_name"), obs_shape=shape).__dict__
        )


def session(model_bytes: bytes) -> onnxruntime.InferenceSession:
    opts = onnxruntime.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    opts.log_severity_level = 3
    return onnxruntime.InferenceSession(model_bytes, opts, providers=["CPUExecutionProvider"])


def load(
    path: str | Path,
    obs_dim: int | None = None,
    act_dim: int | None = None,
    *,
    what: str = "the robot",
    field: str = "checkpoint",
    output: str | None = None,
    obs_shape: tuple[int, ...] | None = None,
) -> OnnxPolicy:
    """The ONNX policy in `path`, checked against `obs_dim` and `act_dim` (when given); `output` names the
    action output of a file with several; `obs_shape` (instead of `obs_dim`) the input of an image network."""
    p = Path(path)
    if not p.is_file():
        raise BadInput(field, f"file not found: {p}")
    return from_bytes(p.read_bytes(), p, obs_dim, act_dim, what=what, field=field, output=output, obs_shape=obs_shape)


def _external_data(model) -> str | None:
    """The external data file a model's weights point to, if any."""
    from onnx.external_data_helper import uses_external_data

    for t in model.graph.initializer:
        if uses_external_data(t):
            return next((e.value for e in t.external_data if e.key == "location"), "?")
    return None


def from_bytes(
    raw: bytes,
    p: Path,
    obs_dim: int | None = None,
    act_dim: int | None = None,
    *,
    what: str = "the robot",
    field: str = "checkpoint",
    output: str | None = None,
    obs_shape: tuple[int, ...] | None = None,
) -> OnnxPolicy:
    """`load` on a file's bytes already read (`p` names it in messages): a caller that keys results
    by the bytes' hash checks and runs exactly the bytes it hashed. With `obs_shape` the input must be
    (batch, *obs_shape), float or uint8 (an image network); the output is (batch, act_dim) as always."""
    try:
        model = onnx.load_from_string(raw)
        external = _external_data(model)  # before the checker, which would only say the data file is missing
        if external is None:
            onnx.checker.check_model(model)
    except Exception as exc:  # onnx raises DecodeError, ValidationError, ... for a bad file
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BadInput(field, f"{p} is not a valid ONNX model ({msg[:200]})") from None
    if external is not None:
        raise BadInput(
            field,
            f"{p} keeps its weights in an external data file ({external!r}); save the network as "
            "one file: onnx.save(onnx.load(PATH), NEW_PATH, save_as_external_data=False)",
        )
    inits = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    outputs = {o.name: o for o in model.graph.output}
    if len(inputs) != 1:
        raise BadInput(field, f"{p}: a policy network needs exactly one input (it has {len(inputs)})")
    if output is not None and output not in outputs:
        raise BadInput(field, f"{p} has no output named {output!r} (its outputs: {', '.join(outputs)})")
    if output is None and len(outputs) != 1:
        raise BadInput(
            field,
            f"{p} has {len(outputs)} outputs ({', '.join(outputs)}); name the action output "
            "(a robot spec's policy_output)",
        )
    inp, out = inputs[0], outputs[output] if output is not None else model.graph.output[0]
    elem = inp.type.tensor_type.elem_type
    in_dims, out_dims = _dims(inp), _dims(out)
    if obs_shape is not None:
        return _image_policy(raw, p, inp, out, elem, in_dims, out_dims, tuple(obs_shape), act_dim, what, field, output)
    if elem not in _FLOAT_TYPES:
        raise BadInput(field, f"{p}: input {inp.name!r} must be float32 or float64")
    if len(in_dims) != 2 or len(out_dims) != 2:
        raise BadInput(field, f"{p}: input and output must be (batch, n) matrices (they are {in_dims} and {out_dims})")
    if obs_dim is not None and in_dims[1] != obs_dim:
        raise BadInput(field, f"{p}: input {inp.name!r} takes {in_dims[1]} observation values; {what} gives {obs_dim}")
    if act_dim is not None and out_dims[1] != act_dim:
        raise BadInput(field, f"{p}: output {out.name!r} gives {out_dims[1]} actions; {what} takes {act_dim}")
    o_dim = obs_dim if obs_dim is not None else in_dims[1]
    a_dim = act_dim if act_dim is not None else out_dims[1]
    if not isinstance(o_dim, int) or not isinstance(a_dim, int):
        raise BadInput(field, f"{p}: the observation and action sizes must be fixed numbers")
    batch_one = _batch_one(p, inp.name, in_dims, field)
    n = 1 if batch_one else 2
    sess = _probed(raw, p, inp.name, out.name, np.zeros((n, o_dim), dtype=_FLOAT_TYPES[elem]), a_dim, field)
    return OnnxPolicy(
        p,
        sess,
        inp.name,
        _FLOAT_TYPES[elem],
        o_dim,
        a_dim,
        None if output is None else out.name,
        batch_one,
        project(raw),
    )


def _batch_one(p: Path, name: str, dims: list, field: str) -> bool:
    """Whether the input's batch dimension is fixed at 1 (run row by row); any other fixed batch is refused."""
    if isinstance(dims[0], int) and dims[0] != 1:
        raise BadInput(
            field,
            f"{p}: input {name!r} has a fixed batch of {dims[0]}; a policy takes a batch of 1 or a symbolic batch",
        )
    return dims[0] == 1


def _probed(raw: bytes, p: Path, inp: str, out: str, probe_obs: np.ndarray, a_dim: int, field: str):
    """An onnxruntime session of `raw`, checked to map `probe_obs` (zeros) to finite (n, a_dim) outputs."""
    n = len(probe_obs)
    try:
        sess = session(raw)
        probe = sess.run([out], {inp: probe_obs})[0]
    except Exception as exc:  # onnxruntime's errors have no common base class
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BadInput(field, f"{p}: onnxruntime cannot run it ({msg[:200]})") from None
    if np.shape(probe) != (n, a_dim):
        raise BadInput(
            field, f"{p}: a batch of {n} observations gave output shape {np.shape(probe)}, not ({n}, {a_dim})"
        )
    if not np.isfinite(probe).all():
        raise BadInput(field, f"{p}: the network gives non-finite actions for a zero observation")
    return sess


def _image_policy(
    raw: bytes, p: Path, inp, out, elem: int, in_dims: list, out_dims: list, shape: tuple, act_dim, what, field, output
) -> OnnxPolicy:
    """`from_bytes` for an image network: input (batch, *shape) float or uint8, output (batch, act_dim)."""
    if elem not in _IMAGE_TYPES:
        raise BadInput(field, f"{p}: input {inp.name!r} must be float32, float64 or uint8 pixel values")
    want = "(batch, " + ", ".join(str(d) for d in shape) + ")"
    if len(in_dims) != 1 + len(shape) or list(in_dims[1:]) != list(shape):
        got = "(" + ", ".join(str(d) for d in in_dims) + ")"
        raise BadInput(field, f"{p}: input {inp.name!r} has shape {got}; {what} is {want}")
    if len(out_dims) != 2 or (act_dim is not None and out_dims[1] != act_dim):
        raise BadInput(field, f"{p}: output {out.name!r} has shape {out_dims}; {what} takes (batch, {act_dim}) logits")
    a_dim = act_dim if act_dim is not None else out_dims[1]
    if not isinstance(a_dim, int):
        raise BadInput(field, f"{p}: the action count must be a fixed number")
    batch_one = _batch_one(p, inp.name, in_dims, field)
    n = 1 if batch_one else 2
    sess = _probed(raw, p, inp.name, out.name, np.zeros((n, *shape), dtype=_IMAGE_TYPES[elem]), a_dim, field)
    return OnnxPolicy(
        p,
        sess,
        inp.name,
        _IMAGE_TYPES[elem],
        int(np.prod(shape)),
        a_dim,
        None if output is None else out.name,
        batch_one,
        None,
        shape,
    )
