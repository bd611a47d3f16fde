"""A shadow Breakout world's parameters, of either model (`ShadowParams`, `RomParams`), and the presets that name them.

A preset's `model` picks the type; a key hashes only what the model's kernel reads (docs/breakout.md, "API")."""

from __future__ import annotations

import json
from pathlib import Path

from policylab.config import load_json_file, validated
from policylab.envs.breakout.physics.params import ShadowParams
from policylab.envs.breakout.presets import PRESET_DIR
from policylab.envs.breakout.rom.params import RomParams
from policylab.errors import BadInput

BreakoutParams = ShadowParams | RomParams
_TYPES = {"physics": ShadowParams, "rom": RomParams}

__all__ = ["BreakoutParams", "RomParams", "ShadowParams", "load_preset", "preset_names"]


def preset_names() -> list[str]:
    return sorted(p.stem.removeprefix("breakout_") for p in PRESET_DIR.glob("breakout_*.json"))


def load_preset(preset: str | Path, field: str = "preset", **overrides) -> BreakoutParams:
    """A preset by name (`go-v1`, `atari`, `ale-exact`, ...) or by JSON file path, with optional overrides."""
    text = str(preset)
    named = PRESET_DIR / f"breakout_{text}.json"
    if named.is_file():
        data = json.loads(named.read_text())
    elif text.endswith(".json") or Path(text).is_file():
        data = load_json_file(text, field)
        if not isinstance(data, dict):
            raise BadInput(field, f"{text} must hold a JSON object of shadow parameters")
    else:
        raise BadInput(field, f"unknown preset {text!r}; expected one of {', '.join(preset_names())} or a .json file")
    data.update(overrides)
    kind = _TYPES.get(data.get("model", "physics"))
    if kind is None:
        raise BadInput(f"{field}.model", f"must be one of {', '.join(_TYPES)}, got {data.get('model')!r}")
    try:
        return validated(kind, data)
    except BadInput as exc:  # name the preset field, e.g. "preset.lives"
        where = field if exc.field == kind.__name__ else f"{field}.{exc.field}"
        raise BadInput(where, exc.message) from None


def resolve_params(params: BreakoutParams | str | Path) -> BreakoutParams:
    """`params` itself, or the preset it names."""
    return params if isinstance(params, (ShadowParams, RomParams)) else load_preset(params)
