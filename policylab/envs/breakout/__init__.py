"""Breakout: the real game (`ale`), the shared contract, and the shadow simulator (`shadow`; models `physics/`, `rom/`).

The entry points load on first use (docs/breakout.md, "Module notes")."""

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
