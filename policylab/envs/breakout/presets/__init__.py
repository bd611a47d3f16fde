"""The shadow Breakout's presets (the JSON files in this folder) and the default, `ale-exact`.

Imports nothing heavy: the request models need the default, and --help must not import numpy."""

from pathlib import Path

PRESET_DIR = Path(__file__).parent
DEFAULT_PRESET = "ale-exact"
