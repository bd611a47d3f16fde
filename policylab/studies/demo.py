"""`policylab demo`: the main job on its embedded defaults, as `make demo` runs it.

The main job is the Breakout training loop: 216 grid candidates x 6 seeds in the shadow
simulator (preset ale-exact), the top 8 screened on real ALE (5 episodes each), the pick validated
against breakout_policy_v3 on 20 fresh ALE seeds, paired by seed, with a verdict. Its options and
fixed settings live in `policylab.studies.breakout.requests.DemoRequest`, beside the `TrainRequest`
it expands to.
"""

from __future__ import annotations

from pathlib import Path

from policylab.studies.breakout.requests import DemoRequest
from policylab.studies.breakout.search import train


def run(req: DemoRequest) -> Path:
    return train.run(req.train_request())
