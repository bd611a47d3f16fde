"""The PPO options, declared once (name, bounds, help) for every command that learns; each request
sets its own defaults. Light on purpose (typing and pydantic only): `--help` loads no torch."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

MAX_MINIBATCH = 65_536 * 4_096  # the most --envs x --rollout samples a learner's update holds

LearningRate = Annotated[float, Field(gt=0.0, le=1.0, description="Adam learning rate, annealed linearly to 0.")]
Epochs = Annotated[int, Field(ge=1, le=100, description="PPO epochs over each rollout.")]
Minibatch = Annotated[
    int, Field(ge=1, le=MAX_MINIBATCH, description="Samples per gradient step (at most --envs x --rollout).")
]
Gamma = Annotated[float, Field(ge=0.0, le=1.0, description="Discount per step.")]
GaeLambda = Annotated[float, Field(ge=0.0, le=1.0, description="GAE lambda.")]
Clip = Annotated[float, Field(gt=0.0, le=1.0, description="PPO clip range of the probability ratio.")]
EntCoef = Annotated[float, Field(ge=0.0, le=1.0, description="Entropy bonus coefficient.")]
VfCoef = Annotated[float, Field(ge=0.0, le=10.0, description="Value loss coefficient.")]
MaxGradNorm = Annotated[float, Field(gt=0.0, le=100.0, description="Global gradient-norm clip.")]

SETTINGS = ("lr", "epochs", "minibatch", "clip", "ent_coef", "vf_coef", "max_grad_norm")  # ppo.Settings
