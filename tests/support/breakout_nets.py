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
