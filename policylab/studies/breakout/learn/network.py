"""The Breakout network: the learner's actor-critic over `policies.breakout_net`'s observation, exported
as the ONNX file every Breakout command plays. FIRE is masked: the file's FIRE logit is the constant FIRE_LOGIT."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from policylab.envs.breakout.contract import FIRE, LEFT, N_FEATURES, NOOP, RIGHT
from policylab.learning.network import ActorCritic
from policylab.policies.breakout_net import N_ACTIONS, NetObsSpec, export_onnx

LEGAL = (NOOP, RIGHT, LEFT)  # the logits the network learns; FIRE's is FIRE_LOGIT
LEGAL_ACTIONS = np.array(LEGAL, dtype=np.int64)  # a sampled index -> the env's action
FIRE_LOGIT = -1e4
FEATURE_CENTRE = np.array([0.5, 0.5, 0, 0, 0.5, 0.5, 1, 0.5, 0], dtype=np.float32)  # of the scaled features
WALL_SCALE = 0.25


def input_affine(spec: NetObsSpec) -> tuple[np.ndarray, np.ndarray]:
    """A fixed (shift, scale) applied to the observation before the first layer (folded into it on
    export). Why: 108 wall flags of 1 would otherwise swamp the first layer's units at the start
    (their sum dominates each unit's input), drowning the few ball and paddle values a policy needs
    first; centred on a full wall (flag - 1) and scaled down, the wall adds nothing until bricks go,
    and the features are centred on mid-screen."""
    n_wall = spec.dim - N_FEATURES * spec.history
    shift = np.concatenate([np.tile(FEATURE_CENTRE, spec.history), np.ones(n_wall, np.float32)])
    scale = np.concatenate([np.ones(N_FEATURES * spec.history, np.float32), np.full(n_wall, WALL_SCALE, np.float32)])
    return shift.astype(np.float32), scale.astype(np.float32)


class BreakoutActorCritic(ActorCritic):
    """The actor-critic with the 3 legal logits (in LEGAL's order) and Breakout's input affine; its
    exported file gives 4 logits (FIRE's a constant, `layers`)."""

    def __init__(self, spec: NetObsSpec, hidden: int, layers: int, activation: str):
        super().__init__(spec.dim, len(LEGAL), hidden, layers, activation, *input_affine(spec))

    def export(self, spec: NetObsSpec, path: Path) -> Path:
        """Write the network as the ONNX file every Breakout command takes (`layers`, this activation)."""
        return export_onnx(self.layers(), spec, path, activation=self.activation)

    def layers(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """(weight, bias) of each layer as float32 arrays, the input affine folded in; the last maps to
        the 4 logits (FIRE's row zero, its bias FIRE_LOGIT): what `export_onnx` writes."""
        *out, (w, b) = self.folded_layers()
        w4 = np.zeros((N_ACTIONS, w.shape[1]), dtype=np.float32)
        b4 = np.zeros(N_ACTIONS, dtype=np.float32)
        for j, a in enumerate(LEGAL):
            w4[a], b4[a] = w[j], b[j]
        b4[FIRE] = FIRE_LOGIT
        out.append((w4, b4))
        return out
