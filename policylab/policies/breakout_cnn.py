"""Pixel (CNN) Breakout agents: ONNX networks on Atari's standard preprocessed frames.

The file contract (`PixelSpec` under `PIXEL_METADATA_KEY`), `stamp` and `export_sb3`: docs/breakout.md,
"Evaluating a pixel (CNN) agent"."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np

from policylab.errors import BadInput

PIXEL_METADATA_KEY = "policylab.breakout_pixels"
ACTIONS = ("NOOP", "FIRE", "RIGHT", "LEFT")  # the minimal action set, in ALE's order
N_ACTIONS = len(ACTIONS)
SRC_H, SRC_W = 210, 160  # the Atari screen: the preprocessing only shrinks it


@dataclass(frozen=True)
class PixelSpec:
    """The preprocessing a pixel network takes, as ale-py's `AtariVectorEnv` keywords name it: frames
    `height` x `width` grayscale (`grayscale` must be true), the max of the last two frames of each
    `frameskip` (`maxpool`), the last `stack` stacked (oldest first), up to `noop_max` noops and a FIRE
    (`fire_reset`) at each reset, the minimal action set. The defaults are the standard (CleanRL, SB3, RL Zoo)."""

    height: int = 84
    width: int = 84
    stack: int = 4
    grayscale: bool = True
    maxpool: bool = True
    frameskip: int = 4
    noop_max: int = 30
    fire_reset: bool = True
    actions: tuple[str, ...] = ACTIONS

    def __post_init__(self) -> None:
        object.__setattr__(self, "actions", tuple(self.actions) if isinstance(self.actions, list) else self.actions)
        checks = (
            ("height", _int_in(self.height, 1, SRC_H - 1), f"an integer from 1 to {SRC_H - 1}"),
            ("width", _int_in(self.width, 1, SRC_W - 1), f"an integer from 1 to {SRC_W - 1}"),
            ("stack", _int_in(self.stack, 1, 16), "an integer from 1 to 16"),
            ("frameskip", _int_in(self.frameskip, 1, 16), "an integer from 1 to 16"),
            ("noop_max", _int_in(self.noop_max, 0, 1000), "an integer from 0 to 1000"),
            ("grayscale", self.grayscale is True, "true (RGB pixel agents are not supported)"),
            ("maxpool", isinstance(self.maxpool, bool), "true or false"),
            ("fire_reset", isinstance(self.fire_reset, bool), "true or false"),
            ("actions", self.actions == ACTIONS, f"the minimal action set {list(ACTIONS)}"),
        )
        for name, ok, want in checks:
            if not ok:
                raise BadInput(f"{PIXEL_METADATA_KEY}.{name}", f"must be {want}, got {getattr(self, name)!r}")

    @property
    def obs_shape(self) -> tuple[int, int, int]:
        """The network's input after the batch: (stack, height, width)."""
        return (self.stack, self.height, self.width)

    @property
    def record(self) -> dict:
        """What a rollout's key holds of the observation (`NetworkFile.record`)."""
        return {"kind": "pixels", **{k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}}

    def to_json(self) -> str:
        return json.dumps({k: v for k, v in self.record.items() if k != "kind"}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, field: str = "policy") -> PixelSpec:
        """The spec in a file's metadata; every field must be there (one line naming what is wrong otherwise)."""
        try:
            data = json.loads(text)
        except ValueError:
            raise BadInput(field, f"metadata {PIXEL_METADATA_KEY!r} is not JSON: {text[:120]!r}") from None
        if not isinstance(data, dict):
            raise BadInput(field, f"metadata {PIXEL_METADATA_KEY!r} must be a JSON object, got {text[:120]!r}")
        names = [f.name for f in fields(cls)]
        missing = [n for n in names if n not in data]
        unknown = sorted(set(data) - set(names))
        if missing or unknown:
            what = f"lacks {', '.join(missing)}" if missing else f"has unknown fields {', '.join(unknown)}"
            raise BadInput(field, f"metadata {PIXEL_METADATA_KEY!r} {what} (expected: {', '.join(names)})")
        return cls(**data)

    def env_kwargs(self) -> dict:
        """The `AtariVectorEnv` (and `BreakoutVectorEnv`) keywords of this preprocessing."""
        return {
            "img_height": self.height,
            "img_width": self.width,
            "grayscale": True,
            "stack_num": self.stack,
            "frameskip": self.frameskip,
            "maxpool": self.maxpool,
            "noop_max": self.noop_max,
            "use_fire_reset": self.fire_reset,
        }


def _int_in(value, lo: int, hi: int) -> bool:
    return type(value) is int and lo <= value <= hi


@dataclass
class CnnPolicy:
    """A pixel network ready to act: greedy actions from (N, stack, H, W) uint8 observations."""

    path: Path
    spec: PixelSpec
    network: object  # policylab.policies.onnx.OnnxPolicy

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """(N, stack, H, W) pixel values -> (N, 4) float64 logits (onnxruntime, one thread)."""
        return self.network.onnxruntime(obs)

    def act(self, obs: np.ndarray) -> np.ndarray:
        """(N, stack, H, W) pixel values -> (N,) int64 actions: the first largest logit."""
        return np.argmax(self.logits(obs), axis=1).astype(np.int64)


def check(raw: bytes, p: Path, meta: dict[str, str], field: str) -> CnnPolicy:
    """A pixel network's bytes checked: its metadata names a valid `PixelSpec`, its input is (batch, stack,
    height, width) of it and its output 4 logits, onnxruntime runs it (`BadInput` naming `field` otherwise)."""
    from policylab.policies import onnx as onnx_policy

    spec = PixelSpec.from_json(meta[PIXEL_METADATA_KEY], field)
    what = f"the Breakout pixel observation ({spec.stack} stacked {spec.height}x{spec.width} frames)"
    net = onnx_policy.from_bytes(raw, p, None, N_ACTIONS, what=what, field=field, obs_shape=spec.obs_shape)
    return CnnPolicy(p, spec, net)


def stamp(model, spec: PixelSpec | None = None) -> None:
    """Write `spec` (default: the standard preprocessing) into an ONNX model's metadata, replacing any earlier
    stamp (for a file made by another exporter, before saving it)."""
    spec = PixelSpec() if spec is None else spec
    kept = [(m.key, m.value) for m in model.metadata_props if m.key != PIXEL_METADATA_KEY]
    del model.metadata_props[:]
    for key, value in [*kept, (PIXEL_METADATA_KEY, spec.to_json())]:
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value


def export_sb3(policy, path: str | Path, spec: PixelSpec | None = None, *, uint8: bool = False) -> Path:
    """The SB3 recipe: `policy` (a `stable_baselines3` `ActorCriticCnnPolicy`, e.g. `PPO.policy`) exported as
    a pixel network: input "obs" (batch, stack, H, W) raw pixel values (uint8 with `uint8`, else float32),
    output "logits" (the policy head's, before the softmax), opset 17, the spec stamped. SB3 scales the
    pixels by 1/255 inside `extract_features`, so the file takes what the env gives. Needs torch (the
    TorchScript exporter, `dynamo=False`, which needs no onnxscript)."""
    import torch

    spec = PixelSpec() if spec is None else spec

    class Logits(torch.nn.Module):
        def __init__(self, policy):
            super().__init__()
            self.policy = policy

        def forward(self, obs):
            features = self.policy.extract_features(obs, self.policy.pi_features_extractor)
            return self.policy.action_net(self.policy.mlp_extractor.forward_actor(features))

    return export_module(Logits(policy.to("cpu").eval()), path, spec.obs_shape, spec, uint8=uint8)


def export_module(module, path: str | Path, obs_shape: tuple, spec: PixelSpec | None, *, uint8: bool = False) -> Path:
    """`module` (torch: (batch, *obs_shape) pixel values -> (batch, 4) logits) exported by torch's TorchScript
    exporter (input "obs" with a symbolic batch, output "logits", opset 17) and `spec` stamped (None: no stamp,
    a file such as another exporter writes)."""
    import onnx
    import torch

    path = Path(path)
    dummy = torch.zeros((1, *obs_shape), dtype=torch.uint8 if uint8 else torch.float32)
    with torch.no_grad():
        torch.onnx.export(
            module,
            (dummy,),
            str(path),
            input_names=["obs"],
            output_names=["logits"],
            dynamic_axes={"obs": {0: "batch"}, "logits": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )
    if spec is not None:
        model = onnx.load(str(path))
        stamp(model, spec)
        onnx.save(model, str(path))
    return path
