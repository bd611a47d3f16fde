"""The shadow Breakout's presets (the JSON files in this folder) and which one is the default.

A package of its own, importing nothing heavy, because both ends need the default: the environments
(`ShadowBreakout`, the Gymnasium env) when a caller names no preset, and the command line's request
models, which must not import numpy to answer --help. The default is `ale-exact`, the cartridge's
own frame logic: ALE's game frame for frame and seed for seed (docs/breakout.md).
"""

from pathlib import Path

PRESET_DIR = Path(__file__).parent
DEFAULT_PRESET = "ale-exact"
