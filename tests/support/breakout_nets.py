"""Small torch MLPs exported as Breakout network files, for the tests of network policies."""

from __future__ import annotations

import torch

from policylab.policies.breakout_net import NetObsSpec, export_onnx


def torch_mlp(spec: NetObsSpec, seed: int, hidden: int = 32) -> torch.nn.Sequential:
    """A small tanh MLP with large enough weights that its greedy action changes with the observation
    (an untrained net at default scale would press one action almost everywhere)."""
    torch.manual_seed(seed)
    net = torch.nn.Sequential(
        torch.nn.Linear(spec.dim, hidden),
        torch.nn.Tanh(),
        torch.nn.Linear(hidden, hidden),
        torch.nn.Tanh(),
        torch.nn.Linear(hidden, 4),
    )
    with torch.no_grad():
        for m in net:
            if isinstance(m, torch.nn.Linear):
                m.weight.mul_(3.0)
    return net


def export(net: torch.nn.Sequential, spec: NetObsSpec, path) -> None:
    """`net` as an ONNX network file (the learner's exporter: its Linear layers' weights)."""
    export_onnx(
        [(m.weight.detach().numpy(), m.bias.detach().numpy()) for m in net if isinstance(m, torch.nn.Linear)],
        spec,
        path,
    )


class _Scaled(torch.nn.Module):
    """A CNN on raw pixel values: divides by 255 first, as SB3's and CleanRL's agents do, and looks at motion."""

    def __init__(self, body: torch.nn.Sequential):
        super().__init__()
        self.body = body

    def forward(self, obs):
        x = obs.float() / 255.0
        # the newest frame and the frame-to-frame changes: the ball and the paddle move, the wall barely does
        return self.body(torch.cat([x[:, -1:], 8.0 * (x[:, 1:] - x[:, :-1])], dim=1))


def torch_cnn(seed: int, stack: int = 4, size: int = 84) -> torch.nn.Module:
    """A small random-weight CNN (conv 8x8/4 8, conv 4x4/2 16, linear to 4 logits) on (N, stack, size, size)
    pixels, its weights scaled up so its greedy action changes with the frames."""
    torch.manual_seed(seed)
    side = ((size - 8) // 4 + 1 - 4) // 2 + 1
    body = torch.nn.Sequential(
        torch.nn.Conv2d(stack, 8, 8, stride=4),
        torch.nn.ReLU(),
        torch.nn.Conv2d(8, 16, 4, stride=2),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(16 * side * side, 4),
    )
    with torch.no_grad():
        for m in body:
            if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
                m.weight.mul_(4.0)
                m.bias.zero_()
    return _Scaled(body).eval()


def export_cnn(net: torch.nn.Module, path, spec=None, *, stack: int = 4, size: int = 84, uint8: bool = False) -> None:
    """`net` exported as `export_sb3` exports (dynamic batch), its `PixelSpec` stamped (None: no stamp)."""
    from policylab.policies.breakout_cnn import export_module

    export_module(net, path, (stack, size, size), spec, uint8=uint8)
