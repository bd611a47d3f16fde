"""Breakout: the real game (`ale`), the observation both sides share (`contract`), and the shadow simulator
(`shadow`) with its two models, the parametric physics (`physics/`) and the cartridge's own logic (`rom/`),
its presets (`presets/`) and ALE's sticky-action stream (`ale_random`).

The documented entry points import from here: ``from policylab.envs.breakout import ShadowBreakout,
load_preset``. They are loaded on first use, so importing a light submodule (`presets`, which the command
line's --help needs) does not pull in numba and Gymnasium; importing `ShadowBreakout` (or `shadow`)
registers the Gymnasium env `policylab/ShadowBreakout-v0`.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "ShadowBreakout": "shadow",
    "ShadowBreakoutEnv": "shadow",
    "GYM_ID": "shadow",
    "ShadowParams": "params",
    "RomParams": "params",
    "BreakoutParams": "params",
    "load_preset": "params",
    "preset_names": "params",
    "DEFAULT_PRESET": "presets",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
