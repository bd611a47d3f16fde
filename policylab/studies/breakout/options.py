"""Checks shared by the plans of `breakout eval`, `audit`, `train`, `transfer` and `learn`: each runs
before the first write (the out folder's config.json), so bad input leaves nothing behind."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from policylab.config import validated
from policylab.envs.breakout.ale import Protocol
from policylab.envs.breakout.params import ShadowParams, load_preset
from policylab.errors import BadInput
from policylab.policies.breakout import load_params
from policylab.policies.breakout_net import NetworkFile, read
from policylab.rollout.executors import check_executor
from policylab.studies.breakout.requests import BreakoutRun, NamedProtocol


def protocol_from(req: NamedProtocol) -> dict:
    """The ALE protocol of a request: its horizon, `--sticky` (absent: ALE's default 0.25) and `--serve`
    (a request without the option, learn's, serves every ball: ALE's default)."""
    return validated(Protocol, req.model_dump(include={"max_steps", "sticky", "serve"}, exclude_none=True)).model_dump()


@dataclass(frozen=True)
class PolicyChoice:
    """The policy a command plays: `name` is what its reports show (a registered policy's name, or a
    network's file name), `params` a tracker's parameters ({} for a network), `network` the checked
    network file (None for a tracker)."""

    name: str
    params: dict
    network: NetworkFile | None = None

    def recorded(self) -> dict:
        """What a config and a report record beyond name and params: the network's content hash and
        observation (the path is left out, so a moved file is the same run); nothing for a tracker,
        whose name and params say it all."""
        return {} if self.network is None else {"network": self.network.record}


def resolve_policy(
    policy: str, params: Path | None, field: str = "policy", params_field: str = "params"
) -> PolicyChoice:
    """A request's policy option (a registered name or a network file, see `requests.Policy`) with its
    parameter file, resolved once in the command's plan; a network takes no parameter file."""
    if policy.lower().endswith(".onnx"):
        if params is not None:
            raise BadInput(params_field, f"{policy} is a network file; it takes no parameter file")
        network = read(policy, field)
        return PolicyChoice(network.name, {}, network)
    return PolicyChoice(policy, load_params(policy, params, params_field))


def check_pixels(network: NetworkFile | None, env: str, shadow, protocol: dict, field: str = "policy") -> None:
    """A pixel (CNN) network plays through the Atari vector envs (`episodes.pixels`): on the shadow only the
    exact model has its frames (preset ale-exact), and the frame skip must be the one it was trained on.
    Nothing to check for a tracker or a feature network."""
    if network is None or not network.pixels:
        return
    if env == "shadow" and shadow is not None and shadow.model != "rom":
        raise BadInput(
            "preset",
            f"{network.name} is a pixel network: it plays on the exact shadow only (--preset ale-exact), "
            f"not on a physics preset ({shadow.name})",
        )
    skips = {"protocol": protocol["frameskip"], **({"preset": shadow.frameskip} if env == "shadow" else {})}
    for where, skip in skips.items():
        if skip != network.spec.frameskip:
            raise BadInput(
                field,
                f"{network.name} takes frames every {network.spec.frameskip} (its metadata); the {where}'s "
                f"frame skip is {skip}",
            )


def resolve_against(against: Path | None) -> NetworkFile | None:
    """`--against`: a second network file the validated network is compared with, read and checked in full
    in the plan (a bad file is one line naming the option)."""
    return None if against is None else read(against, "against")


def shadow_overrides(sticky: float | None) -> dict:
    """`--sticky` given explicitly acts on both envs; otherwise the shadow preset keeps its own."""
    return {} if sticky is None else {"sticky_prob": sticky}


def resolve_preset(preset: str, sticky: float | None, field: str = "preset") -> ShadowParams:
    """The shadow world a command plays: its preset (name or .json file) with `--sticky` applied,
    resolved once in the command's plan; its tasks carry the result."""
    if sticky is not None and sticky >= 1:
        raise BadInput("sticky", "must be below 1 on the shadow simulator (at 1 the policy never acts)")
    return load_preset(preset, field, **shadow_overrides(sticky))


def check_run(req: BreakoutRun) -> Path:
    """Executor, Ray address and store checked; returns the store root (default OUT/store)."""
    check_executor(req.executor, req.ray_address)
    store_root = req.store if req.store is not None else req.out / "store"
    if store_root.exists() and not (store_root / "index.sqlite").is_file() and any(store_root.iterdir()):
        raise BadInput("store", f"{store_root} is neither empty nor a policylab store")
    return store_root


def store_label(store_root: Path, out: Path) -> str:
    """The store as reports name it: relative to the out folder when inside it, so the same command
    into two folders writes the same report bytes."""
    try:
        return str(store_root.resolve().relative_to(out.resolve()))
    except ValueError:
        return str(store_root.resolve())
