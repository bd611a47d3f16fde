"""Train the small pixel (CNN) test agent: a few minutes of SB3 PPO on the exact model, exported to ONNX.

Why: the pixel-agent tests (tests/studies/breakout/episodes/test_pixels.py, tests/policies/test_breakout_cnn.py)
need a CNN that plays Breakout better than chance and was trained here, not someone else's agent. It is SB3's
`PPO("CnnPolicy")` on `policylab.envs.breakout.sb3.make_atari_env` (SB3's own Atari wrappers, on the exact
shadow) with `VecFrameStack(4)`, RL Zoo's Breakout hyperparameters, a smaller conv net than SB3's NatureCNN
(16-32-32 channels, 128 features: the file stays under 1 MB and plays fast), one torch thread, seeds from the
named range ``breakout.cnn_training``. It stops after `--minutes` of wall time and is exported by the
documented recipe (`policylab.policies.breakout_cnn.export_sb3`: the policy head's logits, float32 input of raw
pixel values, the standard `PixelSpec` stamped).

    nice -n 15 .venv/bin/python benchmarks/train_pixel_test_cnn.py --minutes 6 --out tests/data/breakout_cnn_ppo.onnx

The result depends on the wall time (the number of PPO updates that fit), so rerunning it gives another
network: the committed file is the one the tests' numbers describe (its sha256 is in tests/data/README.md).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.vec_env import VecFrameStack

from policylab.envs.breakout.sb3 import make_atari_env
from policylab.policies.breakout_cnn import export_sb3
from policylab.rollout.seeds import seed_range_base


class SmallCnn(BaseFeaturesExtractor):
    """NatureCNN's shape with fewer channels: 8x8/4 16, 4x4/2 32, 3x3/1 32, then 128 features."""

    def __init__(self, observation_space, features_dim: int = 128):
        super().__init__(observation_space, features_dim)
        c = observation_space.shape[0]
        self.cnn = torch.nn.Sequential(
            torch.nn.Conv2d(c, 16, 8, stride=4),
            torch.nn.ReLU(),
            torch.nn.Conv2d(16, 32, 4, stride=2),
            torch.nn.ReLU(),
            torch.nn.Conv2d(32, 32, 3, stride=1),
            torch.nn.ReLU(),
            torch.nn.Flatten(),
        )
        with torch.no_grad():
            n = self.cnn(torch.zeros(1, *observation_space.shape)).shape[1]
        self.linear = torch.nn.Sequential(torch.nn.Linear(n, features_dim), torch.nn.ReLU())

    def forward(self, obs):
        return self.linear(self.cnn(obs))


class WallClock(BaseCallback):
    def __init__(self, seconds: float):
        super().__init__()
        self.deadline = time.time() + seconds

    def _on_step(self) -> bool:
        return time.time() < self.deadline


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=6.0)
    ap.add_argument("--out", type=Path, default=Path("tests/data/breakout_cnn_ppo.onnx"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    seed = seed_range_base("breakout", "cnn_training")
    env = VecFrameStack(make_atari_env("BreakoutNoFrameskip-v4", n_envs=8, seed=seed), n_stack=4)
    model = PPO(
        "CnnPolicy",
        env,
        n_steps=128,
        n_epochs=4,
        batch_size=256,
        learning_rate=2.5e-4,
        clip_range=0.1,
        vf_coef=0.5,
        ent_coef=0.01,
        seed=seed,
        policy_kwargs={"features_extractor_class": SmallCnn, "net_arch": []},
        verbose=0,
        device="cpu",
    )
    started = time.time()
    model.learn(10_000_000, callback=WallClock(args.minutes * 60))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    export_sb3(model.policy, args.out)
    print(
        f"{model.num_timesteps:,} agent steps in {time.time() - started:.0f} s; "
        f"{args.out} ({args.out.stat().st_size:,} bytes)"
    )


if __name__ == "__main__":
    main()
