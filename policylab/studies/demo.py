"""`policylab demo`: the main job on its embedded defaults, as `make demo` runs it.

The main job is the Breakout training loop on its defaults: the 216 grid candidates searched by
successive halving in the exact shadow (preset ale-exact; 216 x 25, 72 x 75, 24 x 225, 8 x 675
seeds, ranked by the mean), the pick validated against breakout_policy_v3 on 2,000 fresh shadow
seeds, paired by seed, the first 20 replayed on real ALE (each score must equal the shadow's), with
a verdict, its interval and the probability that a fresh set reaches it. Its options live in
`policylab.studies.breakout.requests.DemoRequest`, beside the `TrainRequest` it expands to.
"""

from __future__ import annotations

from pathlib import Path

from policylab.studies.breakout.requests import DemoRequest
from policylab.studies.breakout.search import train


def run(req: DemoRequest) -> Path:
    return train.run(req.train_request())
