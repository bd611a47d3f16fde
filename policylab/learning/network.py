"""The actor-critic networks, each behind a fixed input affine: `ActorCritic` (discrete, one shared
trunk) and `GaussianActorCritic` (continuous, separate actor and critic MLPs, a state-independent log-std)."""

from __future__ import annotations

import numpy as np
import torch

# Hidden-layer activations the learner offers (both export as ONNX Relu/Tanh). relu is the default for
# speed: torch's CPU tanh costs as much as a 117 x 64 first layer (measured: 690 us against 27 us for
# relu on 8,192 x 64, 2 threads).
ACTIVATIONS = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}


class ActorCritic(torch.nn.Module):
    """Shared trunk; head = `n_actions` logits + value.

    `shift` and `scale` are a fixed input affine ((x - shift) * scale), applied once per sample when
    it is observed (`normalise`) and folded into the first layer by `folded_layers`. Initialisation:
    orthogonal trunk (gain sqrt 2), small policy logits (a near-uniform start) and a unit-gain value.
    """

    def __init__(
        self, dim: int, n_actions: int, hidden: int, layers: int, activation: str, shift: np.ndarray, scale: np.ndarray
    ):
        super().__init__()
        self.activation = activation
        self.n_actions = n_actions
        self.register_buffer("shift", torch.from_numpy(shift))
        self.register_buffer("scale", torch.from_numpy(scale))
        mods: list[torch.nn.Module] = []
        width = dim
        for _ in range(layers):
            mods += [torch.nn.Linear(width, hidden), ACTIVATIONS[activation]()]
            width = hidden
        self.trunk = torch.nn.Sequential(*mods)
        self.head = torch.nn.Linear(width, n_actions + 1)
        for m in self.trunk:
            if isinstance(m, torch.nn.Linear):
                torch.nn.init.orthogonal_(m.weight, gain=2**0.5)
                torch.nn.init.zeros_(m.bias)
        with torch.no_grad():
            torch.nn.init.orthogonal_(self.head.weight, gain=1.0)
            self.head.weight[:n_actions] *= 0.01
            torch.nn.init.zeros_(self.head.bias)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Normalised observations (`normalise`) -> the action logits and the value."""
        out = self.head(self.trunk(x))
        return out[:, : self.n_actions], out[:, self.n_actions]

    def evaluate(self, x: torch.Tensor, act: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Normalised observations and the actions taken -> their log-probabilities, each row's entropy
        and the values (what `ppo.PPO` differentiates)."""
        logits, value = self(x)
        logp_all = torch.log_softmax(logits, dim=1)
        return logp_all.gather(1, act[:, None]).squeeze(1), -(logp_all.exp() * logp_all).sum(1), value

    def normalise(self, obs: np.ndarray, out: torch.Tensor | None = None) -> torch.Tensor:
        """The fixed input affine, applied once per sample when it is observed (not at every epoch's
        forward), into `out` when given."""
        x = torch.from_numpy(obs).clone() if out is None else out.copy_(torch.from_numpy(obs))
        return x.sub_(self.shift).mul_(self.scale)

    def folded_layers(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """(weight, bias) of each layer as float32 arrays, the input affine folded into the first
        (in float64: W ((x - shift) * scale) + b); the last pair is the head's (logits, then value)."""
        out = [
            (m.weight.detach().numpy().astype(np.float64), m.bias.detach().numpy().astype(np.float64))
            for m in self.trunk
            if isinstance(m, torch.nn.Linear)
        ]
        w0, b0 = out[0]
        scale, shift = self.scale.numpy().astype(np.float64), self.shift.numpy().astype(np.float64)
        out[0] = (w0 * scale, b0 - (w0 * scale) @ shift)
        out = [(w.astype(np.float32), b.astype(np.float32)) for w, b in out]
        out.append((self.head.weight.detach().numpy(), self.head.bias.detach().numpy()))
        return out


def mlp(sizes: list[int], activation: str) -> torch.nn.Sequential:
    """Linear layers of `sizes` with the activation between them (none after the last); orthogonal
    initialisation (gain sqrt 2), zero biases."""
    mods: list[torch.nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        lin = torch.nn.Linear(a, b)
        torch.nn.init.orthogonal_(lin.weight, gain=2**0.5)
        torch.nn.init.zeros_(lin.bias)
        mods.append(lin)
        if i < len(sizes) - 2:
            mods.append(ACTIVATIONS[activation]())
    return torch.nn.Sequential(*mods)


class GaussianActorCritic(torch.nn.Module):
    """A diagonal Gaussian policy for continuous actions: an actor MLP gives the mean from the first
    `actor_dim` inputs, a critic MLP the value from all of them (the inputs past `actor_dim` are what
    only the critic sees in training, e.g. the world's friction: an asymmetric critic), and one
    learned log-std per action dimension, independent of the state.

    The input affine (`shift`, `scale`) is applied when a sample is observed (`normalise`) and folded
    into the actor's first layer on export (`actor_layers`), so the exported actor takes the raw
    observation. Initialisation: the last actor layer scaled by 0.01 (actions start near zero, the
    home pose of a position-controlled robot), a unit-gain value layer, log-std `log_std0`.
    """

    LOG_2PI = float(np.log(2 * np.pi))

    def __init__(
        self,
        actor_dim: int,
        critic_dim: int,
        n_actions: int,
        actor_hidden: list[int],
        critic_hidden: list[int],
        activation: str,
        shift: np.ndarray,
        scale: np.ndarray,
        log_std0: float,
    ):
        super().__init__()
        self.activation = activation
        self.actor_dim = actor_dim
        self.n_actions = n_actions
        self.register_buffer("shift", torch.from_numpy(shift))
        self.register_buffer("scale", torch.from_numpy(scale))
        self.actor = mlp([actor_dim, *actor_hidden, n_actions], activation)
        self.critic = mlp([critic_dim, *critic_hidden, 1], activation)
        with torch.no_grad():
            self.actor[-1].weight *= 0.01
            torch.nn.init.orthogonal_(self.critic[-1].weight, gain=1.0)
        self.log_std = torch.nn.Parameter(torch.full((n_actions,), float(log_std0)))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Normalised observations -> the action means and the values."""
        return self.actor(x[:, : self.actor_dim]), self.critic(x)[:, 0]

    def evaluate(self, x: torch.Tensor, act: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        mean, value = self(x)
        z = (act - mean) * torch.exp(-self.log_std)
        logp = -0.5 * z.square().sum(1) - self.log_std.sum() - 0.5 * self.LOG_2PI * self.n_actions
        entropy = (self.log_std.sum() + 0.5 * (1.0 + self.LOG_2PI) * self.n_actions).expand(len(x))
        return logp, entropy, value

    def sample(self, mean: torch.Tensor, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """One action per row drawn around `mean`, and its log-probability."""
        eps = torch.randn(mean.shape, generator=gen)
        std = torch.exp(self.log_std)
        logp = -0.5 * eps.square().sum(1) - self.log_std.sum() - 0.5 * self.LOG_2PI * self.n_actions
        return mean + std * eps, logp

    normalise = ActorCritic.normalise

    def actor_layers(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """(weight, bias) of each actor layer as float32 arrays, the input affine folded into the first
        (in float64: W ((x - shift) * scale) + b); the output is the action mean."""
        out = [
            (m.weight.detach().numpy().astype(np.float64), m.bias.detach().numpy().astype(np.float64))
            for m in self.actor
            if isinstance(m, torch.nn.Linear)
        ]
        w0, b0 = out[0]
        scale = self.scale.numpy().astype(np.float64)[: self.actor_dim]
        shift = self.shift.numpy().astype(np.float64)[: self.actor_dim]
        out[0] = (w0 * scale, b0 - (w0 * scale) @ shift)
        return [(w.astype(np.float32), b.astype(np.float32)) for w, b in out]
