"""Requests of the Breakout commands and of `policylab demo`: the only place their options, defaults,
bounds and help live. Light (no numpy or numba), so `policylab breakout --help` stays fast; the shared bounds
and why: docs/breakout.md, "Module notes"."""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Annotated, Literal, Optional

from pydantic import AfterValidator, Field, ValidationInfo, field_validator

from policylab.config import ExistingDir, InputFile, OutDir, Request
from policylab.envs.breakout.presets import DEFAULT_PRESET
from policylab.errors import BadInput
from policylab.learning.options import (
    Clip,
    EntCoef,
    Epochs,
    GaeLambda,
    Gamma,
    LearningRate,
    MaxGradNorm,
    Minibatch,
    VfCoef,
)
from policylab.rollout.executors import default_workers
from policylab.rollout.options import ExecutorOption, RayAddress
from policylab.rollout.seeds import seed_range_base
from policylab.studies.breakout.sizes import SHADOW_BATCH, step_bytes, stored_episode_bytes

MAX_EPISODES = 100_000
MAX_STEPS = 27_000  # 108_000 frames / frameskip 4
MAX_SEED = 2**30  # ALE's random_seed is a C int; S + 2 x MAX_EPISODES stays below 2**31
MAX_CANDIDATES = 10_000  # random / tpe budget
MAX_SEARCH_SEEDS = 1_000  # seeds each candidate is scored on (the breakout.search range's size)
DEFAULT_RULE = "low_score_count asc, score_min desc, score_mean desc"  # the original's sort key, verbatim
# What the search maximises, as the selection rule that ranks by it (`selection.rank_candidates`)
OBJECTIVES = {"mean": "score_mean desc", "q25": "score_q25 desc, score_mean desc", "worst-case": DEFAULT_RULE}
GRID_SIZE = 216  # candidates of the grid216 space (search_space.GRID216_AXES)
ALE_STEP_PYTHON_BYTES = 1024  # an ALE step while its episode runs: obs and RAM kept as small arrays in lists
REPLAY_ROW_BYTES = 256  # one line of an eval's replays/*.jsonl

PolicyName = Literal["breakout_policy_v3", "breakout_policy_planner_v1", "breakout_policy_training_v1"]
POLICY_HELP = (
    "Policy to play: breakout_policy_v3, breakout_policy_planner_v1, breakout_policy_training_v1, or an "
    "ONNX network file (.onnx) that declares its observation (docs/breakout.md, 'Network policies')."
)

PRESET_HELP = (
    "Shadow-simulator preset: ale-exact (the default; the cartridge's own frame logic, so ALE's game "
    "frame for frame and seed for seed), atari-cal (a physics model calibrated to ALE traces), atari "
    "(before calibration), go-v1 (the original's Go simulator, for reproducing it), or a preset .json "
    "file."
)
PARAMS_HELP = (
    "JSON file with the policy's full parameter set (every field, in range; a 'policy_' prefix is "
    "accepted); default: the policy's own defaults."
)
# the option that counts the ALE replays differs: transfer's --episodes, learn's --validate-episodes
EXACT_HELP = (
    "On the exact shadow (ale-exact): the network, v3 and the search pick validated on this many fresh "
    "shadow seeds (ALE's scores on those seeds), the first {ale} of them replayed on ALE, each score "
    "checked equal to the shadow's (0: validate on ALE only)."
)
STICKY_HELP = (
    "Sticky-action probability. ALE's default is 0.25 (repeat_action_probability); given explicitly it "
    "also overrides the shadow preset's own value (which must stay below 1)."
)


def _policy(value: str) -> str:
    """A registered policy's name, or a Breakout network file checked in full (`breakout_net.read`:
    readable, valid ONNX, observation metadata, input and output sizes, runs), so a bad file is one
    line naming the option before anything runs."""
    names = typing.get_args(PolicyName)
    if value in names:
        return value
    if not value.lower().endswith(".onnx"):
        raise ValueError(
            f"unknown policy {value!r}; expected one of {', '.join(names)}, or an ONNX network file (.onnx)"
        )
    from policylab.policies.breakout_net import read

    try:
        read(value)
    except BadInput as exc:
        raise ValueError(exc.message) from None
    return value


# -- options several commands share (each request lists them in the order its help shows them) -----------
Out = Annotated[OutDir, Field(description="Output folder: new, empty, or holding a run of this same config.")]
Policy = Annotated[str, Field(min_length=1, max_length=4096, description=POLICY_HELP), AfterValidator(_policy)]
Params = Annotated[Optional[InputFile], Field(description=PARAMS_HELP)]
Seed = Annotated[int, Field(ge=0, le=MAX_SEED, description="First seed S; episode i runs on seed S + i.")]
Horizon = Annotated[
    int,
    Field(
        ge=1,
        le=MAX_STEPS,
        description="Horizon in agent steps (the original used 1800; 27,000 = ALE's 108,000-frame cap at frameskip 4).",
    ),
]
# Named protocols: what --protocol sets. v5 is ALE's standard protocol, the one `ALE/Breakout-v5` plays and
# the published Atari baselines report: the whole game (five lives, every ball served) up to the
# 108,000-frame cap, sticky actions 0.25.
STUDY_MAX_STEPS = 1800  # the original study's horizon, the default without --protocol
PROTOCOLS = {"v5": {"max_steps": MAX_STEPS, "sticky": 0.25, "serve": "auto"}}
ProtocolName = Annotated[
    Optional[Literal["v5"]],
    Field(
        description=(
            "Named settings: v5 is ALE's standard protocol (as ALE/Breakout-v5 and the published baselines: the whole "
            "game, every ball served, to the 108,000-frame cap, i.e. --max-steps 27000 --sticky 0.25; another value "
            "of either is refused with it). Default: none, the study's own 1,800-step episodes."
        )
    ),
]
MaxSteps = Annotated[
    Optional[int],
    Field(
        ge=1,
        le=MAX_STEPS,
        validate_default=True,
        description=(
            f"Horizon in agent steps (default {STUDY_MAX_STEPS:,}, the original's; 27,000 = ALE's 108,000-frame cap at "
            "frameskip 4, what --protocol v5 plays)."
        ),
    ),
]
Sticky = Annotated[Optional[float], Field(ge=0.0, le=1.0, validate_default=True, description=STICKY_HELP)]
Serve = Annotated[
    Literal["auto", "never"],
    Field(
        description="auto: FIRE whenever no ball is in play (every life is played); never: only the first ball is "
        "served (the original's one-ball Atari episodes)."
    ),
]
Preset = Annotated[str, Field(min_length=1, max_length=4096, description=PRESET_HELP)]
Store = Annotated[
    Optional[OutDir],
    Field(
        description="Rollout store folder (default OUT/store); episodes whose key "
        "is present are not run again, so a killed run resumes."
    ),
]
Against = Annotated[
    Optional[InputFile],
    Field(
        description=(
            "Another network file (.onnx), e.g. the previous recipe's policy.onnx, validated beside v3 and the search pick on "
            "the same seeds: the network's paired verdict against it too."
        )
    ),
]


class NamedProtocol(Request):
    """A request with `--protocol`, `--max-steps` and `--sticky` (and `--serve`, where it has one), declared
    by the request itself in that order: a named protocol fills the options it sets and refuses other values
    of them, so after validation `max_steps` is always a number."""

    @field_validator("max_steps", check_fields=False)
    @classmethod
    def _protocol_horizon(cls, v: int | None, info: ValidationInfo) -> int:
        return _from_protocol(info, "max_steps", v, STUDY_MAX_STEPS)

    @field_validator("sticky", check_fields=False)
    @classmethod
    def _protocol_sticky(cls, v: float | None, info: ValidationInfo) -> float | None:
        return _from_protocol(info, "sticky", v, None)

    @field_validator("serve", check_fields=False)
    @classmethod
    def _protocol_serve(cls, v: str, info: ValidationInfo) -> str:
        return _from_protocol(info, "serve", v, v)


def _from_protocol(info: ValidationInfo, field: str, given, default):
    """The value of `field` under the request's named protocol (`PROTOCOLS`, `_named`)."""
    return _named(info, "protocol", PROTOCOLS, field, given, default)


def _named(info: ValidationInfo, option: str, names: dict[str, dict], field: str, given, default):
    """The value of `field` under the name the request's `option` gives (a protocol, a recipe): its own where
    none is named (`default` when not given), the named settings' where one is (`default` where they leave
    `field` alone); a different value given beside the name is refused."""
    name = info.data.get(option)
    if name is None or field not in names[name]:
        return default if given is None else given
    value = names[name][field]
    if given is not None and given != value:
        raise ValueError(
            f"--{option} {name} sets {field.replace('_', '-')} {value}; got {given} (leave the "
            f"option out, or drop --{option})"
        )
    return value


class BreakoutRun(NamedProtocol):
    """A Breakout run that plays episodes. Each request declares out, protocol, max_steps, sticky, serve,
    store, executor and ray_address itself (with the shared options above, in the order its help shows them;
    fields declared here would come first); this base sizes the run from them."""

    def _memory(self, shadow_envs: int, ale: bool) -> int:
        """Peak memory: every worker holds one unit of work (a shadow batch of up to SHADOW_BATCH envs
        over the horizon, or one ALE episode kept as per-step arrays), and the driver one result."""
        workers = 1 if self.executor == "local" else default_workers()
        steps = self.max_steps + 1
        unit = 2 * min(shadow_envs, SHADOW_BATCH) * steps * step_bytes("shadow")  # arrays + per-episode copies
        if ale:
            unit = max(unit, steps * ALE_STEP_PYTHON_BYTES)
        return (workers + 1) * unit

    def _disk(self, shadow_episodes: int, ale_episodes: int) -> int:
        """Disk: every episode stored as played to the horizon (`sizes.stored_episode_bytes`)."""
        return shadow_episodes * stored_episode_bytes("shadow", self.max_steps) + ale_episodes * stored_episode_bytes(
            "ale", self.max_steps
        )


class EvalRequest(BreakoutRun):
    """Run a policy for N seeded episodes; write episodes.jsonl, report.json and report.html (and replays/ of
    the first --replays episodes)."""

    SIZE_FIELDS = ("episodes", "max_steps")

    env: Literal["ale", "shadow"] = Field(
        description="Environment: ale (real Atari Breakout) or shadow (the fast simulator, with --preset)."
    )
    policy: Policy
    params: Params = None
    episodes: int = Field(ge=1, le=MAX_EPISODES, description="Number of episodes; episode i runs on seed S + i.")
    seed: Seed = seed_range_base("breakout", "eval")
    protocol: ProtocolName = None
    max_steps: MaxSteps = None
    sticky: Sticky = None
    serve: Serve = "auto"
    preset: Preset = DEFAULT_PRESET
    video: bool = Field(False, description="Also write an mp4 of episode 0 (every 2nd agent step).")
    replays: int = Field(
        0,
        ge=0,
        le=MAX_EPISODES,
        description="Write the per-step replays of the first K episodes "
        "to OUT/replays/epNNN_seedS.jsonl (at most --episodes). Default 0: every trajectory is in "
        "the store either way (its key is in report.json).",
    )
    out: Out
    store: Store = None
    executor: ExecutorOption = "local"
    ray_address: RayAddress = None

    @field_validator("replays")
    @classmethod
    def _replays_within_episodes(cls, v: int, info: ValidationInfo) -> int:
        episodes = info.data.get("episodes")
        if episodes is not None and v > episodes:
            raise ValueError(f"{v} is more than --episodes ({episodes})")
        return v

    def needs(self) -> tuple[int, int]:
        shadow = self.env == "shadow"
        memory = self._memory(self.episodes if shadow else 0, not shadow)
        disk = self._disk(self.episodes if shadow else 0, 0 if shadow else self.episodes)
        return memory + (self.max_steps + 1) * step_bytes(
            self.env
        ), disk + self.replays * self.max_steps * REPLAY_ROW_BYTES


class AuditRequest(BreakoutRun):
    """Run a policy on both envs on the same seeds; write audit.json and audit.html (gaps + decision)."""

    SIZE_FIELDS = ("episodes", "max_steps", "candidates")

    policy: Policy
    params: Params = None
    episodes: int = Field(
        6,
        ge=1,
        le=MAX_EPISODES,
        description="Episodes per env; episode i runs on seed S + i "
        "(with --candidates, ALE also plays the reference seeds S + N .. S + 2N - 1).",
    )
    seed: Seed = seed_range_base("breakout", "eval")
    protocol: ProtocolName = None
    max_steps: MaxSteps = None
    sticky: Sticky = None
    serve: Serve = "auto"
    preset: Preset = DEFAULT_PRESET
    candidates: Optional[InputFile] = Field(
        None,
        description=f"JSON list of {{candidate_id, params}} (3 to {MAX_CANDIDATES:,} entries): each candidate "
        "runs on both envs, plus ALE on a disjoint seed set, for the shadow-vs-ALE rank correlation "
        "and its noise ceiling.",
    )
    compare_preset: Optional[str] = Field(
        None,
        min_length=1,
        max_length=4096,
        description="A second shadow preset (e.g. atari, before calibration) "
        "played on the same candidates and seeds; audit.json's `compare` section shows both presets' rank "
        "correlation, score ratios and feature gaps side by side (needs --candidates).",
    )
    out: Out
    store: Store = None
    executor: ExecutorOption = "local"
    ray_address: RayAddress = None

    @field_validator("compare_preset")
    @classmethod
    def _compare_needs_candidates(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is not None and info.data.get("candidates") is None:
            raise ValueError("needs --candidates (the comparison is over the candidates' ranking)")
        return v

    def candidate_count(self) -> int:
        """Entries in the candidates file (0 without one; its content is checked by the plan)."""
        if self.candidates is None:
            return 0
        try:
            data = json.loads(self.candidates.read_text())
        except (OSError, ValueError):
            return 0
        return len(data) if isinstance(data, list) else 0

    def needs(self) -> tuple[int, int]:
        n = self.candidate_count()
        shadow = self.episodes * (1 + n * (2 if self.compare_preset else 1))
        ale = self.episodes * (1 + 2 * n)
        return self._memory(shadow, True), self._disk(shadow, ale)


class TransferRequest(BreakoutRun):
    """Validate a network file as the training loop validates its pick: the network, breakout_policy_v3 and the
    search pick on fresh seeds, on ALE (paired by seed: bootstrap CIs, verdicts) and on the shadow (the transfer
    gap: shadow vs ALE means and their ratio); write transfer.json and transfer.html."""

    SIZE_FIELDS = ("episodes", "gap_episodes", "exact_episodes", "max_steps")

    policy: Policy = Field(
        description="The network to validate: an ONNX network file (.onnx) that declares its "
        "observation (docs/breakout.md, 'Network policies')."
    )
    against: Against = None
    episodes: int = Field(
        20, ge=1, le=MAX_EPISODES, description="ALE seeds of the paired validation (the first of the gap's seeds)."
    )
    gap_episodes: int = Field(
        100,
        ge=1,
        le=MAX_EPISODES,
        description="Episodes per policy on each env for the transfer gap (20 cannot resolve a 10% ratio).",
    )
    exact_episodes: int = Field(2000, ge=0, le=MAX_EPISODES, description=EXACT_HELP.format(ale="--episodes"))
    seed: Seed = Field(
        seed_range_base("breakout", "transfer"),
        description="First seed S (both envs); episode i "
        "runs on seed S + i. Default: the breakout.transfer range, disjoint from every training, "
        "search, screening and validation seed.",
    )
    protocol: ProtocolName = None
    max_steps: MaxSteps = None
    sticky: Sticky = None
    serve: Serve = "auto"
    preset: Preset = DEFAULT_PRESET
    out: Out
    store: Store = None
    executor: ExecutorOption = "local"
    ray_address: RayAddress = None

    def needs(self) -> tuple[int, int]:
        players = 3 if self.against is None else 4
        shadow = players * max(self.gap_episodes, self.exact_episodes)
        ale = players * max(self.episodes, self.gap_episodes)
        return self._memory(shadow, True), self._disk(shadow, ale)


class TrainRequest(BreakoutRun):
    """Search v3-family parameters in the search env, validate the pick on ALE, give a verdict."""

    SIZE_FIELDS = ("budget", "search_seeds", "rounds", "screen_episodes", "exact_episodes", "max_steps")

    out: Out
    space: Literal["grid216", "random", "tpe"] = Field(
        "grid216",
        description="Search space: grid216 (216 documented grid points c000-c215), random (uniform over "
        "the v3 ranges) or tpe (Optuna TPE).",
    )
    budget: Optional[int] = Field(
        None,
        ge=1,
        le=MAX_CANDIDATES,
        validate_default=True,
        description="Number of candidates for random and tpe (grid216 has a fixed size).",
    )
    space_seed: int = Field(0, ge=0, le=MAX_SEED, description="Seed of the random / TPE proposals.")
    search_env: Literal["shadow", "ale"] = Field(
        "shadow", description="Where candidates are searched: shadow (the fast simulator) or ale."
    )
    preset: Preset = Field(DEFAULT_PRESET, description=PRESET_HELP + " Used with --search-env shadow.")
    objective: Literal["mean", "q25", "worst-case"] = Field(
        "mean",
        description="What the search maximises over a candidate's search seeds: mean (the mean score), q25 "
        "(the lower quartile, then the mean) or worst-case (the original's rule: fewest scores below 3, then the "
        "minimum, then the mean).",
    )
    search_seeds: int = Field(
        25,
        ge=1,
        le=MAX_SEARCH_SEEDS,
        description="Seeds of breakout.search every candidate "
        "is scored on in the first round (the first N of the range).",
    )
    rounds: int = Field(
        4,
        ge=1,
        le=10,
        description="Successive-halving rounds: after each but the last, the best "
        "1/--keep of the candidates go on, on --keep times as many seeds (1: every candidate on "
        "--search-seeds seeds, no halving).",
    )
    keep: int = Field(
        3,
        ge=2,
        le=10,
        description="Halving factor: each round keeps 1/K of the candidates and scores them on K times the seeds.",
    )
    screen_top: Optional[int] = Field(
        None,
        ge=1,
        le=MAX_CANDIDATES,
        description="Multi-fidelity: re-play the top K search candidates on ALE and pick among them on ALE.",
    )
    screen_episodes: int = Field(5, ge=1, le=MAX_EPISODES, description="ALE episodes per screened candidate.")
    screen_seed: Seed = Field(seed_range_base("breakout", "screening"), description="First ALE screening seed.")
    validate_episodes: int = Field(
        20,
        ge=1,
        le=MAX_EPISODES,
        description="ALE seeds of the validation: on a "
        "physics preset (or --exact-episodes 0) the validation itself, from --validate-seed; "
        "on the exact shadow the first K exact seeds replayed on ALE, each ALE score "
        "checked equal to the shadow's.",
    )
    validate_seed: Seed = Field(
        seed_range_base("breakout", "validation"),
        description="First ALE validation seed (physics presets); must not overlap the search or screening seeds.",
    )
    exact_episodes: int = Field(
        2000,
        ge=0,
        le=MAX_EPISODES,
        description="On the exact shadow (ale-exact): the pick "
        "and the baseline validated on this many fresh shadow seeds from --exact-seed, which "
        "are ALE's scores on those seeds (0: validate on ALE only).",
    )
    exact_seed: Seed = Field(
        seed_range_base("breakout", "exact_validation"),
        description="First seed of the exact "
        "validation (default: the breakout.exact_validation range, disjoint from every seed "
        "used for selection).",
    )
    baseline: Policy = Field(
        "breakout_policy_v3",
        description="Baseline policy (a registered one with its defaults, or an ONNX network file).",
    )
    protocol: ProtocolName = None
    max_steps: MaxSteps = Field(
        None,
        description=f"Horizon in agent steps, on both envs (default "
        f"{STUDY_MAX_STEPS:,}; 27,000 = ALE's 108,000-frame cap at frameskip 4).",
    )
    sticky: Sticky = None
    serve: Serve = "auto"
    video: bool = Field(True, description="mp4 of the pick on ALE (validation seed 0).")
    store: Store = None
    executor: ExecutorOption = "local"
    ray_address: RayAddress = None

    @field_validator("keep")
    @classmethod
    def _schedule_fits_the_range(cls, v: int, info: ValidationInfo) -> int:
        first, rounds = info.data.get("search_seeds"), info.data.get("rounds")
        if first is not None and rounds is not None and first * v ** (rounds - 1) > MAX_SEARCH_SEEDS:
            raise ValueError(
                f"the last round would need {first} x {v}^{rounds - 1} = {first * v ** (rounds - 1):,} "
                f"seeds per candidate; breakout.search holds {MAX_SEARCH_SEEDS:,}"
            )
        return v

    def schedule(self, pool: int) -> list[tuple[int, int]]:
        """(candidates, seeds each) per round of the successive halving over `pool` candidates."""
        out, alive = [], pool
        for r in range(self.rounds):
            out.append((alive, self.search_seeds * self.keep**r))
            alive = max(1, -(-alive // self.keep))
        return out

    @field_validator("budget")
    @classmethod
    def _budget_fits_space(cls, v: int | None, info: ValidationInfo) -> int | None:
        space = info.data.get("space")
        if space == "grid216" and v is not None:
            raise ValueError(f"grid216 has a fixed size of {GRID_SIZE}; --budget is for random and tpe")
        if space in ("random", "tpe") and v is None:
            raise ValueError(f"space {space!r} needs --budget")
        return v

    @field_validator("screen_top")
    @classmethod
    def _screen_top_fits_pool(cls, v: int | None, info: ValidationInfo) -> int | None:
        pool = info.data.get("budget") or GRID_SIZE
        if v is not None and v > pool:
            raise ValueError(f"{v} is larger than the candidate pool ({pool})")
        return v

    def pool_size(self) -> int:
        return GRID_SIZE if self.budget is None else self.budget

    def needs(self) -> tuple[int, int]:
        search, seen = 0, 0
        for alive, seeds in self.schedule(self.pool_size()):
            search, seen = search + alive * (seeds - seen), seeds
        screen = (self.screen_top or 0) * self.screen_episodes
        ale = (
            2 * self.validate_episodes + screen + (search if self.search_env == "ale" else 0) + (2 if self.video else 0)
        )
        shadow = (search if self.search_env == "shadow" else 0) + 2 * self.exact_episodes
        return self._memory(shadow, True), self._disk(shadow, ale)


class DemoRequest(Request):
    """Run the Breakout training loop on its defaults (the 216 grid candidates searched by successive halving
    on the exact shadow, the pick validated against breakout_policy_v3 on 2,000 fresh exact-shadow seeds, the
    first 20 confirmed on real ALE) and print where its report is."""

    out: Out = Field(Path("runs/demo"), description="Output folder for the demo's reports.")
    executor: ExecutorOption = "processes"
    ray_address: RayAddress = None

    def train_request(self) -> TrainRequest:
        return TrainRequest(out=self.out, executor=self.executor, ray_address=self.ray_address)

    def needs(self) -> tuple[int, int]:
        return self.train_request().needs()


class TraceRequest(Request):
    """Record frame-level ALE traces (per-frame action + full RAM) for system identification."""

    out: OutDir = Field(description="Folder for the trace .npz files (one per scenario) and traces.json.")
    scenario: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        ["all"],
        min_length=1,
        max_length=100,
        description="Scenario name (repeatable) from the standard suite: "
        "paddle_holds, paddle_alternate, noop_serves, random_holds_a/b, policy_* (see "
        "policylab/studies/breakout/fidelity/trace.py), or 'all'.",
    )


class CalibrateRequest(Request):
    """Fit the shadow simulator to the ALE traces; write the calibrated preset and the calibration report."""

    out: OutDir = Field(description="Output folder: preset.json, calibration.json, calibration.html.")
    traces: Optional[ExistingDir] = Field(
        None,
        description="Folder of trace .npz files (default: the committed suite in "
        "policylab/studies/breakout/fidelity/traces).",
    )
    base: str = Field(
        "atari",
        min_length=1,
        max_length=4096,
        description="Preset the fit starts from: atari-cal, atari, go-v1 or a preset .json file.",
    )
    write_preset: bool = Field(
        False,
        description="Also write policylab/envs/breakout/presets/breakout_atari-cal.json (what the project ships).",
    )


class LockstepRequest(Request):
    """Drive real ALE and the shadow simulator with the same per-frame actions and compare them on every frame
    (ball, paddle, bricks, score, lives, screen); write lockstep.json and report.html with a frame strip at the
    first divergence of the first diverging episodes."""

    out: Out
    preset: Preset = DEFAULT_PRESET
    episodes: int = Field(20, ge=1, le=MAX_EPISODES, description="Number of episodes; episode i runs on seed S + i.")
    seed: Seed = Field(
        seed_range_base("breakout", "lockstep"),
        description="First seed S; episode i runs on seed "
        "S + i (ALE's and the shadow's seed, the sticky stream and the random policies' streams).",
    )
    max_steps: Horizon = STUDY_MAX_STEPS
    frameskip: int = Field(
        4, ge=1, le=16, description="Emulator frames per agent step: the policy acts every FRAMESKIP frames."
    )
    sticky: float = Field(
        0.25,
        ge=0.0,
        lt=1.0,
        description="Per-frame probability that the previous frame's action "
        "is applied again: decided once per frame from ALE's own sticky stream for the episode's "
        "seed, applied to both games.",
    )
    policy: list[Literal["v3", "pick", "random-v3", "random-actions"]] = Field(
        ["v3", "pick", "random-v3", "random-actions"],
        min_length=1,
        max_length=100,
        description="Policy kinds (repeatable); episode i plays kind i mod K: v3 (breakout_policy_v3 defaults), pick "
        "(the training pick, see --pick-params), random-v3 (a uniform v3-family candidate per episode), "
        "random-actions (a uniform action per agent step).",
    )
    pick_params: Optional[InputFile] = Field(
        None,
        description="Parameters of the 'pick' kind (a train run's policy_params.json); default: what "
        "'policylab breakout train' picks on its defaults, recomputed (seconds).",
    )
    strips: int = Field(
        8,
        ge=0,
        le=100,
        description="Frame strips (ALE vs shadow around the first divergence) for the first K diverging episodes.",
    )


MAX_LEARN_STEPS = 900_000_000  # agent steps: every episode needs a fresh seed of breakout.learn (900M)
MAX_ENVS = 65_536


# Named recipes: what `breakout learn --recipe` sets. v5 is the best measured for ALE's standard protocol
# (docs/breakout.md, "On ALE's standard protocol"): the whole game, late starts from score 220 on half the
# restarts, 128 units per hidden layer, the transfer gap over 20 whole games per environment.
RECIPES = {"v5": {"protocol": "v5", "late_starts": 0.5, "late_score": 220, "hidden": 128, "gap_episodes": 20}}
LEARN_DEFAULTS = {"hidden": 64, "late_starts": 0.0, "late_score": 300, "gap_episodes": 100}  # without a recipe
RECIPE_HELP = (
    "Named settings of a measured recipe: v5, the best measured for ALE's standard protocol, is --protocol v5 "
    "--late-starts 0.5 --late-score 220 --hidden 128 --gap-episodes 20 (442.0 over 2,000 fresh exact seeds, 95% "
    "CI 436.9 to 447.0; about 21 minutes on 2 cores; docs/breakout.md); another value of an option it sets is "
    "refused with it. Default: none, each option's own default."
)


def _set_by_recipe(description: str, **bounds: float) -> typing.Any:
    """A learn option a named recipe may set: None until validated, then its own default (`LEARN_DEFAULTS`) or the
    recipe's value (`LearnRequest._recipe_option`), so a value given beside a recipe can be told from none."""
    return Field(None, validate_default=True, description=description, **bounds)


class LearnRequest(NamedProtocol):
    """Learn a Breakout network with PPO in the shadow simulator, export it to OUT/policy.onnx, validate it
    on ALE against breakout_policy_v3 and the search pick; write learn.json and report.html. Rerunning the
    same command resumes from OUT/checkpoint.pt."""

    SIZE_FIELDS = ("envs", "rollout", "history")

    out: Out
    recipe: Optional[Literal["v5"]] = Field(None, description=RECIPE_HELP)
    preset: Preset = DEFAULT_PRESET
    steps: int = Field(
        179_961_856,
        ge=1,
        le=MAX_LEARN_STEPS,
        description="Budget in agent steps (rounded down "
        "to whole updates of --envs x --rollout; the default is 1,373 updates of 2,048 x 64: the whole command took "
        "a median 1,206 s on 2 cores with its validation, 3 runs beside other jobs, BENCHMARKS.md).",
    )
    envs: int = Field(
        2048,
        ge=1,
        le=MAX_ENVS,
        description="Shadow envs played at once; a finished env restarts on a fresh seed of the breakout.learn range.",
    )
    rollout: int = Field(64, ge=1, le=4096, description="Agent steps per env between updates.")
    history: int = Field(1, ge=1, le=8, description="Agent steps of features the network sees (newest first).")
    wall: bool = Field(True, description="The network also sees the 6 x 18 live-brick flags (--no-wall: not).")
    hidden: Optional[int] = _set_by_recipe("Units per hidden layer (default 64; 128 with --recipe v5).", ge=1, le=1024)
    layers: int = Field(2, ge=1, le=4, description="Hidden layers of the shared trunk.")
    activation: Literal["relu", "tanh"] = Field(
        "relu",
        description="Hidden-layer activation (relu by default: torch's CPU tanh costs as much as the first layer).",
    )
    seed: int = Field(
        0,
        ge=0,
        le=MAX_SEED,
        description="Seed of the initial weights, the sampled actions and the "
        "minibatches (env seeds come from the breakout.learn range).",
    )
    threads: int = Field(
        2,
        ge=1,
        le=256,
        description="Threads: the envs are split into this many shards, each "
        "played and learned on its own thread; a run is deterministic for a given seed and thread "
        "count.",
    )
    # the PPO options (`policylab.learning.options`), with this study's defaults
    lr: LearningRate = 2.5e-3
    epochs: Epochs = 1
    minibatch: Minibatch = 2048
    gamma: Gamma = Field(0.99, description="Discount per agent step.")
    gae_lambda: GaeLambda = 0.95
    clip: Clip = 0.2
    ent_coef: EntCoef = 0.01
    vf_coef: VfCoef = 0.5
    max_grad_norm: MaxGradNorm = 0.5
    reward_scale: float = Field(
        0.1, gt=0.0, le=10.0, description="Brick points are multiplied by this for learning (reports show raw scores)."
    )
    late_starts: Optional[float] = _set_by_recipe(
        "Share of restarts that resume one of the learner's own late-game states instead of a fresh seed: practice "
        "on the end of the wall, which few fresh games reach (default 0: every game starts fresh; 0.5 with --recipe "
        "v5; the curves count fresh games only).",
        ge=0.0,
        le=0.9,
    )
    late_score: Optional[int] = _set_by_recipe(
        "Score at which a game's state is kept for --late-starts, once per game (default 300; 220 with --recipe v5).",
        ge=1,
        le=1728,
    )
    protocol: ProtocolName = Field(None, validate_default=True)
    max_steps: MaxSteps = Field(
        None,
        description=f"Episode horizon in agent steps, in training (a truncation, "
        f"bootstrapped) and in validation (default {STUDY_MAX_STEPS:,}; 27,000 with "
        "--protocol v5).",
    )
    sticky: Sticky = None
    checkpoint_every: int = Field(
        50, ge=1, le=100_000, description="Write OUT/checkpoint.pt every K updates (and after the last)."
    )
    against: Against = None
    validate_episodes: int = Field(
        20,
        ge=0,
        le=MAX_EPISODES,
        description="Fresh ALE seeds on which the learned "
        "network is validated against v3 and the search pick, paired by seed (0: skip "
        "the validation).",
    )
    gap_episodes: Optional[int] = _set_by_recipe(
        "Episodes on each env behind each policy's shadow/ALE mean ratio (the transfer gap; 20 seeds cannot resolve "
        "10%; default 100, 20 with --recipe v5).",
        ge=1,
        le=MAX_EPISODES,
    )
    exact_episodes: int = Field(2000, ge=0, le=MAX_EPISODES, description=EXACT_HELP.format(ale="--validate-episodes"))

    @field_validator("hidden", "late_starts", "late_score", "gap_episodes")
    @classmethod
    def _recipe_option(cls, v, info: ValidationInfo):
        return _named(info, "recipe", RECIPES, info.field_name, v, LEARN_DEFAULTS[info.field_name])

    @field_validator("protocol")
    @classmethod
    def _recipe_protocol(cls, v, info: ValidationInfo):
        return _named(info, "recipe", RECIPES, "protocol", v, None)

    executor: ExecutorOption = Field(
        "processes",
        description="Where the validation's episodes run: local (this "
        "process), processes (a process pool) or ray; results are identical.",
    )

    def needs(self) -> tuple[int, int]:
        """Memory: one rollout's samples (observation, 5 per-sample floats) twice over (buffers and the
        flattened batch), plus the envs' state; disk: the checkpoint (network and Adam are small next
        to the env arrays and observer history)."""
        dim = 9 * self.history + (108 if self.wall else 0)
        samples = self.envs * self.rollout
        memory = 2 * samples * (dim + 6) * 4 + self.envs * (1024 + dim * 8)
        disk = self.envs * (512 + self.history * 9 * 4) + 64 * self.hidden * (dim + self.hidden)
        return memory, disk
