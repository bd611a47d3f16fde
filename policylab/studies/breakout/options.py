"""Validation shared by `breakout eval` and `breakout audit`: everything is checked before the
first write (the out folder's config.json), so bad input leaves nothing behind."""

from __future__ import annotations

from pathlib import Path

from policylab.config import validated
from policylab.envs.breakout_ale import Protocol
from policylab.errors import BadInput
from policylab.rollout.executors import check_executor


def protocol_from(max_steps: int, sticky: float | None, serve: str) -> Protocol:
    data = {"max_steps": max_steps, "serve": serve}
    if sticky is not None:
        data["sticky"] = sticky
    return validated(Protocol, data)


def check_counts(episodes: int, seed: int) -> None:
    if episodes <= 0:
        raise BadInput("episodes", f"must be a positive integer, got {episodes}")
    if seed < 0:
        raise BadInput("seed", f"must be a non-negative integer, got {seed}")


def resolve_policy(name: str, params_file: Path | None, field: str = "params") -> dict:
    """The policy's full parameter dict: its defaults, or a validated params JSON file."""
    from policylab.policies import breakout as policies

    return policies.load_params(name, params_file, field)


def validate_candidate(policy: str, params: object, field: str) -> dict:
    """A candidate's parameter set, checked against `policy`'s parameter space."""
    from policylab.policies import breakout as policies

    return policies.validate_params(policy, params, field)


def shadow_overrides(sticky: float | None) -> dict:
    """`--sticky` given explicitly acts on both envs; otherwise the shadow preset keeps its own."""
    return {} if sticky is None else {"sticky_prob": sticky}


def check_preset(preset: str, sticky: float | None):
    from policylab.envs.breakout_shadow_params import load_preset

    return load_preset(preset, "preset", **shadow_overrides(sticky))


def check_run(executor: str, out: Path, store: Path | None) -> Path:
    check_executor(executor)
    if out.exists() and not out.is_dir():
        raise BadInput("out", f"{out} exists and is not a folder")
    store_root = store if store is not None else out / "store"
    if store_root.exists() and not (store_root / "index.sqlite").is_file() and any(store_root.iterdir()):
        raise BadInput("store", f"{store_root} is neither empty nor a policylab store")
    return store_root


def store_label(store_root: Path, out: Path) -> str:
    """The store as reports name it: relative to the out folder when inside it, so the same command
    into two folders writes the same report bytes."""
    try:
        return str(store_root.resolve().relative_to(out.resolve()))
    except ValueError:
        return str(store_root)
