"""The linear policy (`policies.linear`) fixed to the Ant's sizes: 27 observations -> 8 torques.

Why linear: Mania et al. (2018, "Simple random search provides a competitive approach to RL")
showed linear policies with observation whitening walk on MuJoCo Ant; 216 weights train in
minutes on two CPU cores with random search, and the whole checkpoint is a few kB of .npz.
The Ant's training recipe (`studies/boundary/train.py`) and its committed checkpoints use this
module; everything but the Ant's shapes is `policies.linear`.
"""

from __future__ import annotations

from pathlib import Path

from policylab.envs.ant import ACT_DIM, OBS_DIM
from policylab.policies import linear
from policylab.policies.linear import LinearPolicy, act, save

__all__ = ["LinearPolicy", "act", "load", "save"]


def load(path: str | Path) -> LinearPolicy:
    """The Ant policy in checkpoint `path`; a file that is not an .npz, a corrupt one, or one whose
    arrays do not fit the Ant (weights (8, 27), finite, obs_std > 0) is bad input naming the checkpoint."""
    return linear.load(path, OBS_DIM, ACT_DIM, robot_name="the Ant")
