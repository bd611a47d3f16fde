"""What `policylab breakout learn` checks before it writes anything, and the run's config (what
OUT/config.json remembers, so a rerun of the same command resumes and another is refused)."""

from __future__ import annotations

from dataclasses import dataclass

from policylab.envs.breakout.params import ShadowParams
from policylab.errors import BadInput
from policylab.learning.learner import check_sizes
from policylab.policies.breakout_net import WALL_COLS, WALL_ROWS, NetObsSpec, NetworkFile
from policylab.result import PLACEMENT_FIELDS
from policylab.studies.breakout import options
from policylab.studies.breakout.requests import LEARN_DEFAULTS, LearnRequest

# where a run goes and where its episodes run, never what it learns: a rerun line leaves the
# placement options out (`policylab.result.command_line`), so the config that it must match does too
RUN_ONLY = ("out", *PLACEMENT_FIELDS)
LATER_OPTIONS = ("late_starts", "late_score")


@dataclass(frozen=True)
class Plan:
    req: LearnRequest
    spec: NetObsSpec
    shadow: ShadowParams
    protocol: dict
    against: NetworkFile | None
    rollout: int
    updates: int
    config: dict


def plan(req: LearnRequest) -> Plan:
    """Check everything the request model could not (nothing is written here)."""
    spec = NetObsSpec(history=req.history, wall=req.wall)
    shadow = options.resolve_preset(req.preset, req.sticky)
    if (shadow.brick_rows, shadow.brick_cols) != (WALL_ROWS, WALL_COLS):
        raise BadInput(
            "preset",
            f"a network observes a 6 x 18 wall; this preset has {shadow.brick_rows} x {shadow.brick_cols} bricks",
        )
    protocol = options.protocol_from(req)
    against = options.resolve_against(req.against)
    if against is not None and not req.validate_episodes:
        raise BadInput("against", "is compared in the validation, which --validate-episodes 0 skips")
    updates = check_sizes(req.threads, req.envs, req.rollout, req.minibatch, req.steps)
    # a named protocol or recipe is shorthand for the options it sets, whose values the config holds
    config = req.model_dump(mode="json", exclude={*RUN_ONLY, "recipe", "protocol", "against", *LATER_OPTIONS})
    # options added after runs were recorded are recorded only where they differ from their default, so such
    # a run resumes
    config.update({k: getattr(req, k) for k in LATER_OPTIONS if getattr(req, k) != LEARN_DEFAULTS[k]})
    if against is not None:  # the file's content, not its path: a moved file is the same run
        config["against"] = against.record
    config.update(
        {
            "command": "breakout learn",
            "protocol": protocol,
            "shadow": shadow.model_dump(mode="json"),
            "updates": updates,
            "seed_range": "breakout.learn",
        }
    )
    return Plan(req, spec, shadow, protocol, against, req.rollout, updates, config)
