"""`policylab demo`: the main job on its embedded defaults, as `make demo` runs it.

The Breakout training loop on its defaults (README.md); its options live in `requests.DemoRequest`."""

from __future__ import annotations

from pathlib import Path

from policylab.studies.breakout.requests import DemoRequest
from policylab.studies.breakout.search import train


def run(req: DemoRequest) -> Path:
    return train.run(req.train_request())
