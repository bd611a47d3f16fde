"""Network policies for Breakout: the observation a network sees, and ONNX files that act on it.

Why a second observation beside the 9 contract features: a memoryless tracker needs only the ball
and the paddle, but a learned policy that aims needs the brick wall, and one that reads motion
from frames needs a short history. Both environments can give both (ALE: the wall is the playfield
bytes ram[0:36], decoded by `envs.breakout.rom.kernel.brick_flags`; the shadow: `ShadowBreakout.walls`), so a network
cannot tell which one it plays, exactly as a tracker cannot.

The observation of one env at one agent step is `envs.breakout.net_obs`'s (scaled feature history, then
the wall when the file asks for it), built there once for every path that feeds a network: the rollouts
here, the learner, and the Gymnasium env `policylab/ShadowBreakout-v0` made with the file's `net_obs`.

A network file is an ONNX model (one loader: `policylab.policies.onnx`) whose input is that vector
and whose output is 4 logits over the minimal action set (NOOP, FIRE, RIGHT, LEFT). The file says
which observation it takes in its metadata (`OBS_METADATA_KEY`, a JSON object of `NetObsSpec`), so a
network trained elsewhere on the same features runs the same way. Acting is greedy (the first
largest logit); the protocol's serve rule is applied by the episode runner, as for every policy.
A file in the form `mlp_bytes` writes (what `breakout learn` makes) acts through
`policylab.portable_math.dense` in float64, so its rollouts are the same bytes on any x86-64 CPU;
any other file acts through onnxruntime, whose float32 kernels the CPU picks.

A rollout knows a network as a `NetworkFile`: the bytes it checked, their sha256 and the
observation they declare. The store keys an episode by the hash and the observation (`record`),
never by the path, so an edited file plays again and a moved or renamed one does not; tasks carry
the bytes themselves, so a worker runs exactly what was hashed even if the file changes meanwhile.

`export_onnx` writes the one network form this project makes (learn's policy head, the tests'
networks): Gemm layers with tanh or relu between them, built with `onnx.helper` from the weights
(torch's `nn.Linear` layout), so the file's bytes depend on the weights alone, not on an exporter's
version.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import numpy as np

from policylab.envs.breakout.contract import N_FEATURES
from policylab.envs.breakout.net_obs import (FEATURE_SCALE, MAX_HISTORY, OBS_METADATA_KEY, WALL_COLS,  # noqa: F401
                                             WALL_ROWS, NetObsSpec, NetObserver)
from policylab.errors import BadInput

N_ACTIONS = 4
INPUT_NAME, OUTPUT_NAME = "obs", "logits"
ACTIVATIONS = {"tanh": "Tanh", "relu": "Relu"}
OPSET, IR_VERSION = 17, 8  # onnx 1.23 writes IR 8 for opset 17; onnxruntime 1.32 reads both


@dataclass
class BreakoutNetPolicy:
    """An ONNX Breakout network with the observation its file declares; greedy actions.

    `mlp` holds the layers of a file in the form this project writes (`mlp_bytes`), which then acts
    through `policylab.portable_math.dense` instead of onnxruntime: float64 sums in a fixed order
    and a CPU-independent tanh, so its actions are the same bytes on any x86-64 CPU. Any other ONNX
    file acts through onnxruntime, whose kernels are chosen by the CPU."""

    path: Path
    spec: NetObsSpec
    network: object  # policylab.policies.onnx.OnnxPolicy
    mlp: MlpLayers | None = None

    def observer(self, n_envs: int) -> NetObserver:
        return NetObserver(self.spec, n_envs)

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """(N, dim) observations -> (N, 4) float64 logits."""
        if self.mlp is None:
            return self.network.act(obs)
        return self.mlp.logits(obs)

    def act(self, obs: np.ndarray) -> np.ndarray:
        """(N, dim) observations -> (N,) int64 actions: the first largest logit."""
        return np.argmax(self.logits(obs), axis=1).astype(np.int64)

    def actor(self, n_envs: int) -> NetActor:
        return NetActor(self, n_envs)


@dataclass(frozen=True)
class MlpLayers:
    """An `mlp_bytes` network as float64 arrays for `portable_math.dense`: (W.T, b) per layer, the
    activation between layers (1 tanh, 2 relu). float32 weights and observations are exact in float64, so the
    logits are the network's, rounded once per operation in a fixed order."""

    layers: tuple[tuple[np.ndarray, np.ndarray], ...]
    activation: int

    def logits(self, obs: np.ndarray) -> np.ndarray:
        from policylab.portable_math import dense

        x = np.ascontiguousarray(obs, dtype=np.float64)
        last = len(self.layers) - 1
        for i, (w_t, b) in enumerate(self.layers):
            x = dense(x, w_t, b, 0 if i == last else self.activation)
        return x


def project_mlp(raw: bytes, model, spec: NetObsSpec) -> MlpLayers | None:
    """The layers of `raw` when it is exactly the file `mlp_bytes` writes for its own weights (what
    `breakout learn` and `export_onnx` make); None for any other ONNX file."""
    from onnx import numpy_helper

    nodes = list(model.graph.node)
    gemms = [n for n in nodes if n.op_type == "Gemm"]
    acts = {n.op_type for n in nodes if n.op_type != "Gemm"}
    names = {v: k for k, v in ACTIVATIONS.items()}
    if not gemms or len(acts) > 1 or not acts <= set(names):
        return None
    activation = names[acts.pop()] if acts else "tanh"
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    try:
        layers = [(inits[f"w{i}"], inits[f"b{i}"]) for i in range(len(gemms))]
        if mlp_bytes(layers, spec, activation) != raw:
            return None
    except (KeyError, BadInput):
        return None
    return MlpLayers(tuple((np.ascontiguousarray(w.T, dtype=np.float64), b.astype(np.float64)) for w, b in layers),
                     1 if activation == "tanh" else 2)


class NetActor:
    """The network playing N envs from their first step: the first call starts each env's history at
    the reset observation, every later call pushes one agent step. `wall` says whether the caller
    must pass the walls (decoding ALE's wall from RAM is skipped for a network without one)."""

    def __init__(self, policy: BreakoutNetPolicy, n_envs: int):
        self.policy = policy
        self.observer = policy.observer(n_envs)
        self.wall = policy.spec.wall
        self._started = False

    def __call__(self, features: np.ndarray, walls: np.ndarray | None) -> np.ndarray:
        obs = self.observer.observe(features, walls) if self._started else self.observer.reset(features, walls)
        self._started = True
        return self.policy.act(obs)


@dataclass(frozen=True)
class NetworkFile:
    """A checked network file as rollouts know it: `name` (the file name, a label for reports), its
    bytes, their sha256 and the observation it declares. Pickles with its bytes (a worker process
    opens the same network without reading the file again)."""

    name: str
    sha256: str
    spec: NetObsSpec
    model: bytes = field(repr=False)

    @property
    def record(self) -> dict:
        """What a rollout's key holds of the network: content and observation, never the path."""
        return {"format": "onnx", "sha256": self.sha256, "observation": asdict(self.spec)}

    def policy(self) -> BreakoutNetPolicy:
        """The network, opened once per process (onnxruntime sessions are reused across tasks)."""
        return _opened(self.sha256, self.model, self.name)


@lru_cache(maxsize=8)
def _opened(sha256: str, model: bytes, name: str) -> BreakoutNetPolicy:
    return _check(model, Path(name), "policy")


def _check(raw: bytes, p: Path, field: str) -> BreakoutNetPolicy:
    """Every check of `read` on bytes: metadata names a valid observation, sizes fit it, onnxruntime runs it."""
    import onnx

    from policylab.policies import onnx as onnx_policy

    try:
        meta = {m.key: m.value for m in onnx.load_from_string(raw).metadata_props}
    except Exception:  # not an ONNX model: the one loader names the problem
        onnx_policy.from_bytes(raw, p, field=field)
        raise
    if OBS_METADATA_KEY not in meta:
        raise BadInput(field, f"{p}: no {OBS_METADATA_KEY!r} metadata; a Breakout network must say which "
                       "observation it takes (see docs/breakout.md)")
    spec = NetObsSpec.from_json(meta[OBS_METADATA_KEY], field)
    net = onnx_policy.from_bytes(raw, p, spec.dim, N_ACTIONS, what="the Breakout observation", field=field)
    return BreakoutNetPolicy(p, spec, net, project_mlp(raw, onnx.load_from_string(raw), spec))


def read(path: str | Path, field: str = "policy") -> NetworkFile:
    """The network in `path`, checked (`BadInput` naming `field` otherwise): a valid ONNX model whose
    metadata names its observation and whose input and output sizes fit it."""
    p = Path(path)
    if not p.is_file():
        raise BadInput(field, f"file not found: {p}")
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise BadInput(field, f"cannot read {p} ({exc.strerror or exc})") from None
    return NetworkFile(p.name, hashlib.sha256(raw).hexdigest(), _check(raw, p, field).spec, raw)


def load(path: str | Path, field: str = "policy") -> BreakoutNetPolicy:
    """The network in `path`, checked as by `read`, ready to act."""
    p = Path(path)
    net = read(p, field).policy()
    return BreakoutNetPolicy(p, net.spec, net.network, net.mlp)


def stamp(model, spec: NetObsSpec) -> None:
    """Write `spec` into an ONNX model's metadata (the exporter calls this before saving)."""
    entry = model.metadata_props.add()
    entry.key = OBS_METADATA_KEY
    entry.value = spec.to_json()


def export_onnx(layers: Sequence[tuple[np.ndarray, np.ndarray]], spec: NetObsSpec, path: str | Path,
                activation: str = "tanh") -> Path:
    """Write an MLP to `path` (atomically): `layers` are (weight (out, in), bias (out,)) pairs in
    torch's `nn.Linear` layout, `activation` between consecutive layers, 4 logits out; the observation
    spec stamped."""
    from policylab.fileio import atomic_write_bytes

    atomic_write_bytes(Path(path), mlp_bytes(layers, spec, activation))
    return Path(path)


def mlp_bytes(layers: Sequence[tuple[np.ndarray, np.ndarray]], spec: NetObsSpec, activation: str = "tanh") -> bytes:
    """The ONNX bytes of `export_onnx`. Each layer is one Gemm (transB=1, the `x @ W.T + b` of
    nn.Linear) on float32 weights; the batch dimension is symbolic. The bytes are a function of the
    weights, the spec and the activation."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    if activation not in ACTIVATIONS:
        raise BadInput("activation", f"must be one of {', '.join(ACTIVATIONS)}, got {activation!r}")
    if not layers:
        raise BadInput("layers", "an MLP needs at least one layer")
    width = spec.dim
    nodes, inits, x = [], [], INPUT_NAME
    for i, (w, b) in enumerate(layers):
        w = np.asarray(w, dtype=np.float32)
        b = np.asarray(b, dtype=np.float32)
        if w.ndim != 2 or w.shape[1] != width or b.shape != (w.shape[0],):
            raise BadInput(f"layers[{i}]", f"weight {w.shape} and bias {b.shape} do not take {width} inputs")
        width = w.shape[0]
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        last = i == len(layers) - 1
        y = OUTPUT_NAME if last else f"h{i}"
        nodes.append(helper.make_node("Gemm", [x, f"w{i}", f"b{i}"], [y], transB=1))
        if not last:
            nodes.append(helper.make_node(ACTIVATIONS[activation], [y], [f"a{i}"]))
            y = f"a{i}"
        x = y
    if width != N_ACTIONS:
        raise BadInput("layers", f"the last layer gives {width} outputs; a Breakout network gives {N_ACTIONS} logits")
    graph = helper.make_graph(
        nodes, "breakout_mlp",
        [helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, ["batch", spec.dim])],
        [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["batch", N_ACTIONS])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION,
                              producer_name="policylab")
    stamp(model, spec)
    onnx.checker.check_model(model)
    return model.SerializeToString()

