"""The request of each Lava Leap command: `lava-leap run` (`RunRequest`), validated at the boundary."""

from __future__ import annotations

from pydantic import Field

from policylab.config import OutDir
from policylab.studies.lava_leap.config import LavaLeapConfig


class RunRequest(LavaLeapConfig):
    """Run baseline and ceiling, E1-E6, the LR sweep (chosen on the training seeds, compared on fresh
    validation seeds), clip statistics, the slow-seed analysis and the test-floor statistics, with t
    intervals over training seeds and paired verdicts; write the JSON, the charts and index.html
    into OUT."""

    SIZE_FIELDS = ("rounds", "group_size")

    out: OutDir = Field(
        description="Output folder: results/*.json, assets/*.png and index.html. Must be new, "
        "empty, or hold a run of this same configuration."
    )

    def needs(self) -> tuple[int, int]:
        """Peak memory: one run's pre-drawn uniforms plus its weight history (float64), twice over for
        the copies the kernel makes; disk: the JSON and six charts, a few MB."""
        # numba-compiled modules: imported here so that building the CLI (`--help`) stays light
        from policylab.studies.lava_leap.agent import PLAY_DRAWS
        from policylab.studies.lava_leap.floor import FLOOR_DRAWS

        per_round = FLOOR_DRAWS + self.G * PLAY_DRAWS + 12
        return 2 * 8 * self.rounds * per_round, 20 * 2**20

    def config(self) -> dict:
        """What config.json records: the hyperparameters, not where they were written."""
        return dict(study="lava_leap", **self.model_dump(exclude={"out"}))
