"""The study's configuration: the post's hyperparameters (the base of `requests.RunRequest`) and the
experiment's fixed inputs (the original's constants: the narrative numbers are about those floors)."""

from __future__ import annotations

from pydantic import Field, ValidationInfo, field_validator

from policylab.config import Request
from policylab.rollout.seeds import seed_range_base, world_seed

# fixed inputs of the original script
TEST_SEED, N_TEST = seed_range_base("lava_leap", "test_floors"), 200  # the test floors every policy is scored on
SHOWCASE_SEED = 8  # E1: first seed whose floor has 6 channels, 2 of them 2-wide
WALK_SEED, WALK_AT = 22, 20  # E3a/E4: a hard floor; GRPO (first seed) frozen after 20 updates
BLIND_SEED, BLIND_DRAWS = 31, 40  # E3b: floors the trained PPO bot plays, 8 runs each
SIM_SEED, SIM_PLAYS = 7, 50  # Monte Carlo cross-check: generator seed, plays per test floor
SLOW_AT, PLATEAU = 100, (10, 140)  # slow-seed analysis: rank at update 100, plateau 10..140
LR_SWEEP = {"reinforce": [1.0, 1.5], "ppo": [1.0, 1.5], "grpo": [1.0]}
SHOW_PLAYS = 8  # E1 / E3b plays per floor


class LavaLeapConfig(Request):
    """Hyperparameters of one `lava-leap run` (defaults = the post's)."""

    lr: float = Field(0.5, gt=0, le=100, description="Policy learning rate.")
    eps: float = Field(
        0.2,
        gt=0,
        lt=1,
        description="Clip width: a step stops pushing once its ratio leaves "
        "[1-eps, 1+eps] in its advantage's direction.",
    )
    G: int = Field(
        8,
        ge=2,
        le=256,
        alias="group_size",
        json_schema_extra={"short": ["-G"]},
        description="G: plays of each training floor per update (GRPO's advantage of a single play is zero).",
    )
    passes: int = Field(4, ge=1, le=64, description="Passes over each group for GRPO and PPO.")
    rounds: int = Field(
        300,
        ge=PLATEAU[1],
        le=20_000,
        description="Training updates per run (the slow-seed analysis reads the curve up to update 140).",
    )
    eval_every: int = Field(
        10, ge=1, le=10, description="Exact evaluation every this many updates; must divide 10 and rounds."
    )
    lr_critic: float = Field(0.5, gt=0, le=100, description="PPO critic learning rate.")
    n_seeds: int = Field(5, ge=1, le=100, alias="seeds", description="Training seeds per algorithm.")
    seed_base: int = Field(
        seed_range_base("lava_leap", "training"),
        ge=0,
        le=1_000_000,
        description="Training seed i is seed_base + i. The learning rates are chosen on these seeds.",
    )
    validation_seed_base: int = Field(
        seed_range_base("lava_leap", "validation"),
        ge=0,
        le=1_000_000,
        description="Validation seed i is validation_seed_base + i: each "
        "algorithm's chosen learning rate is compared on these fresh "
        "seeds; they must not overlap the training seeds.",
    )

    @field_validator("validation_seed_base")
    @classmethod
    def _fresh_validation_seeds(cls, v: int, info: ValidationInfo) -> int:
        n, base = info.data.get("n_seeds"), info.data.get("seed_base")
        if n is not None and base is not None and v < base + n and base < v + n:
            raise ValueError(
                f"validation seeds {v}..{v + n - 1} overlap the training seeds {base}..{base + n - 1}; "
                "selection and validation must not share seeds"
            )
        return v

    @field_validator("eval_every")
    @classmethod
    def _eval_points(cls, v: int, info: ValidationInfo) -> int:
        if 10 % v:
            raise ValueError("must divide 10 (updates 10, 20, 50, 100 and 140 are read from the curve)")
        rounds = info.data.get("rounds")
        if rounds is not None and rounds % v:
            raise ValueError(f"must divide rounds ({rounds}) so the last update is evaluated")
        return v

    @property
    def seeds(self) -> list[int]:
        return [world_seed("lava_leap", 0, i, base=self.seed_base) for i in range(self.n_seeds)]

    @property
    def validation_seeds(self) -> list[int]:
        return [world_seed("lava_leap", 0, i, base=self.validation_seed_base) for i in range(self.n_seeds)]

    def train_kwargs(self, **override) -> dict:
        kw = dict(
            lr=self.lr,
            eps=self.eps,
            G=self.G,
            passes=self.passes,
            rounds=self.rounds,
            eval_every=self.eval_every,
            lr_critic=self.lr_critic,
        )
        kw.update(override)
        return kw
