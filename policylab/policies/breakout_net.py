"""Network policies for Breakout: the observation a network sees, and ONNX files that act on it.

Observation, file contract and keys (content hash, never the path): docs/breakout.md, "Network policies"."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from policylab.envs.breakout.net_obs import (  # noqa: F401
    FEATURE_SCALE,
    MAX_HISTORY,
    OBS_METADATA_KEY,
    WALL_COLS,
    WALL_ROWS,
    NetObserver,
    NetObsSpec,
)
from policylab.errors import BadInput
from policylab.policies import mlp
from policylab.policies.breakout_cnn import PIXEL_METADATA_KEY, CnnPolicy, PixelSpec
from policylab.policies.mlp import MlpLayers

N_ACTIONS = 4
INPUT_NAME, OUTPUT_NAME, GRAPH_NAME = "obs", "logits", "breakout_mlp"


@dataclass
class BreakoutNetPolicy:
    """An ONNX Breakout network with the observation its file declares; greedy actions.

    A file in the form this project writes (`policies.mlp`) acts through `policylab.portable_math.dense`
    instead of onnxruntime (the loader, `policies.onnx`, decides): float64 sums in a fixed order and a
    CPU-independent tanh, so its actions are the same bytes on any x86-64 CPU. Any other ONNX file
    acts through onnxruntime, whose kernels are chosen by the CPU."""

    path: Path
    spec: NetObsSpec
    network: object  # policylab.policies.onnx.OnnxPolicy

    @property
    def mlp(self) -> MlpLayers | None:
        """The file's layers when it acts through the portable kernel; None when through onnxruntime."""
        return self.network.mlp

    def observer(self, n_envs: int) -> NetObserver:
        return NetObserver(self.spec, n_envs)

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """(N, dim) observations -> (N, 4) float64 logits."""
        return self.network.act(obs)

    def act(self, obs: np.ndarray) -> np.ndarray:
        """(N, dim) observations -> (N,) int64 actions: the first largest logit."""
        return np.argmax(self.logits(obs), axis=1).astype(np.int64)

    def actor(self, n_envs: int) -> NetActor:
        return NetActor(self, n_envs)


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
    bytes, their sha256 and the observation it declares (`NetObsSpec`, or `PixelSpec` for a pixel
    agent). Pickles with its bytes (a worker process opens the same network without reading the file
    again)."""

    name: str
    sha256: str
    spec: NetObsSpec | PixelSpec
    model: bytes = field(repr=False)

    @property
    def pixels(self) -> bool:
        """Whether the network is a pixel (CNN) agent, played through the pixel envs."""
        return isinstance(self.spec, PixelSpec)

    @property
    def record(self) -> dict:
        """What a rollout's key holds of the network: content and observation, never the path."""
        observation = self.spec.record if self.pixels else asdict(self.spec)
        return {"format": "onnx", "sha256": self.sha256, "observation": observation}

    def policy(self) -> BreakoutNetPolicy | CnnPolicy:
        """The network, opened once per process (onnxruntime sessions are reused across tasks)."""
        return _opened(self.sha256, self.model, self.name)


@lru_cache(maxsize=8)
def _opened(sha256: str, model: bytes, name: str) -> BreakoutNetPolicy | CnnPolicy:
    return _check(model, Path(name), "policy")


def _check(raw: bytes, p: Path, field: str) -> BreakoutNetPolicy | CnnPolicy:
    """Every check of `read` on bytes: metadata names a valid observation (features or pixels), sizes fit
    it, onnxruntime runs it."""
    import onnx

    from policylab.policies import breakout_cnn
    from policylab.policies import onnx as onnx_policy

    try:
        meta = {m.key: m.value for m in onnx.load_from_string(raw).metadata_props}
    except Exception:  # not an ONNX model: the one loader names the problem
        onnx_policy.from_bytes(raw, p, field=field)
        raise
    if OBS_METADATA_KEY in meta and PIXEL_METADATA_KEY in meta:
        raise BadInput(field, f"{p}: both {OBS_METADATA_KEY!r} and {PIXEL_METADATA_KEY!r} metadata; keep one")
    if PIXEL_METADATA_KEY in meta:
        return breakout_cnn.check(raw, p, meta, field)
    if OBS_METADATA_KEY not in meta:
        raise BadInput(
            field,
            f"{p}: no {OBS_METADATA_KEY!r} (features) or {PIXEL_METADATA_KEY!r} (pixels) metadata; a Breakout "
            "network must say which observation it takes (see docs/breakout.md)",
        )
    spec = NetObsSpec.from_json(meta[OBS_METADATA_KEY], field)
    net = onnx_policy.from_bytes(raw, p, spec.dim, N_ACTIONS, what="the Breakout observation", field=field)
    return BreakoutNetPolicy(p, spec, net)


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


def load(path: str | Path, field: str = "policy") -> BreakoutNetPolicy | CnnPolicy:
    """The network in `path`, checked as by `read`, ready to act."""
    p = Path(path)
    net = read(p, field).policy()
    return type(net)(p, net.spec, net.network)


def stamp(model, spec: NetObsSpec) -> None:
    """Write `spec` into an ONNX model's metadata (for a file made by another exporter, before saving)."""
    entry = model.metadata_props.add()
    entry.key = OBS_METADATA_KEY
    entry.value = spec.to_json()


def export_onnx(
    layers: Sequence[tuple[np.ndarray, np.ndarray]], spec: NetObsSpec, path: str | Path, activation: str = "tanh"
) -> Path:
    """Write an MLP to `path` (atomically): `layers` are (weight (out, in), bias (out,)) pairs in
    torch's `nn.Linear` layout, `activation` between consecutive layers, 4 logits out; the observation
    spec stamped."""
    from policylab.fileio import atomic_write_bytes

    atomic_write_bytes(Path(path), mlp_bytes(layers, spec, activation))
    return Path(path)


def mlp_bytes(layers: Sequence[tuple[np.ndarray, np.ndarray]], spec: NetObsSpec, activation: str = "tanh") -> bytes:
    """The ONNX bytes of `export_onnx` (`policies.mlp.mlp_bytes`): `spec.dim` inputs, 4 logits, the
    spec in the metadata; a function of the weights, the spec and the activation."""
    if layers and np.shape(layers[0][0])[1:] != (spec.dim,):
        raise BadInput("layers[0]", f"weight {np.shape(layers[0][0])} does not take the {spec.dim} observation values")
    if layers and np.shape(layers[-1][0])[:1] != (N_ACTIONS,):
        raise BadInput(
            "layers",
            f"the last layer's weight {np.shape(layers[-1][0])} does not give the {N_ACTIONS} "
            "logits of a Breakout network",
        )
    return mlp.mlp_bytes(
        layers,
        activation,
        input_name=INPUT_NAME,
        output_name=OUTPUT_NAME,
        graph_name=GRAPH_NAME,
        metadata={OBS_METADATA_KEY: spec.to_json()},
    )
