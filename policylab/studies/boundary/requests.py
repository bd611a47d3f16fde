"""What each `policylab boundary` command accepts: one request model per command (its schema alone).

Light (stdlib, pydantic, `policylab.config`, the study's constants): `--help` loads no MuJoCo or SciPy."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

from pydantic import AfterValidator, BeforeValidator, Field, ValidationInfo, field_validator, model_validator

from policylab.config import OutDir, Request, StrictModel, check_out_dir, resolved
from policylab.envs.robots.spec import DEFAULT_ROBOT, available
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
from policylab.rollout.options import ExecutorOption, RayAddress
from policylab.rollout.seeds import named_range
from policylab.studies.boundary.analysis_folder import missing_stage
from policylab.studies.boundary.axes import AXES
from policylab.studies.boundary.constants import (
    CHECKPOINT_DIR,
    DEFAULT_DIR,
    DEFAULT_MU,
    DEFAULT_PUSH,
    DEFAULT_SEEDS_PER_CELL,
    DEFAULT_T0,
    MU_RANGE,
    MU_RES,
    PUSH_DURATION_S,
    PUSH_RANGE,
    PUSH_RES,
    T0_RANGE,
    axis_size,
)
from policylab.studies.boundary.robot_policies import (
    DEFAULT_CHECKPOINT,
    default_checkpoint,
    policies_path,
    robot_policies,
    train_configs,
    train_help,
)

RUNS = Path("runs/boundary")
STORE = RUNS / "store"
SWEEP_SEEDS = named_range("boundary", "sweep")
MAX_SEED = 2**32 - 1  # bootstrap generator seeds (numpy SeedSequence entropy)
SHIPPED_ROBOTS = ", ".join(available())  # the spec folders under envs/robots/specs/

CHECKPOINT_HELP = (
    "Policy file: a committed checkpoint name (go1_v4, go1_v2, go1_v3, go1_v0, go1_v1, ant_v0, ant_v1) or the path of "
    "a linear .npz or an .onnx network; its observation and action sizes must fit the robot (default: "
    f"{DEFAULT_CHECKPOINT} with the command it was trained for; with --robot, the one its spec folder names: "
    + ", ".join(f"{r} {default_checkpoint(r)}" for r in available())
    + ", else <spec file name>_v0)."
)
ROBOT_HELP = (
    f"Robot: a shipped spec ({SHIPPED_ROBOTS}) or the path of a robot spec .json (MJCF, bodies, control, "
    "observation, failure rule); default: the checkpoint's own robot (a committed one's record, or "
    f"the robot a policy file's metadata names; a file naming none needs --robot), else {DEFAULT_ROBOT}."
)
STORE_HELP = "Store folder of the sweep (holds index.sqlite), as written by `policylab boundary sweep`."
KEEP_DIVERGED_HELP = (
    "Go on with a sweep that holds diverged rollouts (a non-finite action from the policy, or a "
    "non-finite state), leaving them out of the risk set; without it such a sweep is refused."
)
OUT_HELP = "Analysis folder of one sweep (reduce writes it; later stages add sub-folders)."


# -- field checks -------------------------------------------------------------------------------
def _robot(spec: str | None) -> str | None:
    """A shipped robot name or a robot spec file that loads and fits its model, and whose policies file beside
    it (`robot_policies`), when there is one, validates."""
    if spec is None:
        return spec
    from policylab.envs.robots.robot import robot

    try:
        robot(spec)
        robot_policies(spec)
    except BadInput as exc:
        raise ValueError(exc.message) from None
    return spec


def _is_store(path: Path) -> Path:
    """A folder holding a store index (opened to check it, never written: an archived read-only
    store is one; a half-made index is completed when it is next opened), returned resolved."""
    from policylab.rollout.store import index_problem

    path = resolved(path)
    why = index_problem(path)
    if why is not None:
        raise ValueError(
            why
            if (path / "index.sqlite").is_file()
            else f"no store at {path} (expected {path / 'index.sqlite'}, written by `policylab boundary sweep`)"
        )
    return path


def _new_or_store(path: Path) -> Path:
    """Where a sweep writes: a new or empty folder, or a store (resumed), returned resolved."""
    path = resolved(path)
    if path.is_dir() and (path / "index.sqlite").exists():
        return _is_store(path)
    if path.is_dir() and any(path.iterdir()):
        raise ValueError(f"{path} is neither a store (no index.sqlite) nor empty; choose another --store")
    return check_out_dir(path)


def _has_stages(*stages: str):
    def check(out: Path) -> Path:
        for stage in stages:
            why = missing_stage(out, stage)
            if why:
                raise ValueError(why)
        return out

    return AfterValidator(check)


def _not_a_run(out: Path) -> Path:
    """A folder for checkpoint files, never another command's run folder (those hold config.json)."""
    if (out / "config.json").exists():
        raise ValueError(f"{out} holds a run (config.json); write checkpoints to a folder of their own")
    return out


def _reduced_or_diff(out: Path) -> Path:
    if missing_stage(out, "diff") and missing_stage(out, "reduce") and missing_stage(out, "search"):
        raise ValueError(missing_stage(out, "reduce"))
    return out


def _command_values(v: Any) -> Any:
    """``--command "vx,vy,yaw"``: comma-separated finite numbers (a list passes as it is)."""
    if not isinstance(v, str):
        return v
    try:
        values = [float(x) for x in v.split(",")]
    except ValueError:
        raise ValueError(f"expected comma-separated numbers (e.g. 0.5,0,0), got {v!r}") from None
    if not all(math.isfinite(x) for x in values):
        raise ValueError(f"every value must be a finite number, got {v!r}")
    return values


CheckpointSpec = Optional[str]
Command = Annotated[Optional[list[float]], BeforeValidator(_command_values)]
RobotSpec = Optional[str]  # loaded by the command's plan, with the checkpoint (`checkpoint.resolve_checkpoint`)
SweepName = Annotated[str, Field(min_length=1, max_length=200)]
StoreDir = Annotated[Path, AfterValidator(_is_store)]
SweepStore = Annotated[Path, AfterValidator(_new_or_store)]


def _default_out(data: Any, cls: type[Request], prefix: str, per_store: bool = False) -> Any:
    """Fill `out` with runs/boundary/<prefix>-<checkpoint name> when it is not given, or, `per_store`, with
    STORE-<prefix>-<checkpoint name> beside the store the command uses: a folder remembers its config, so
    one default shared by every store would refuse the same command on a second store."""
    if isinstance(data, dict) and data.get("out") is None:
        spec = data.get("checkpoint") or cls.model_fields["checkpoint"].default
        if spec is None:
            robot = data.get("robot")
            try:
                spec = default_checkpoint(robot)
            except BadInput:  # a robot that does not resolve: the command's plan refuses it, naming robot
                spec = str(robot)
        name = f"{prefix}-{Path(str(spec)).stem}"
        if per_store:
            store = resolved(str(data.get("store") or cls.model_fields["store"].default))
            data = {**data, "out": store.parent / f"{store.name}-{name}"}
        else:
            data = {**data, "out": RUNS / name}
    return data


# -- robot, train, calibrate, sweep, verify ------------------------------------------------------------
class RobotRequest(Request):
    """Check a robot spec against its model and describe it: bodies, actuators, sensors, the observation's
    layout and size, and how a zero policy fares in nominal worlds (a warning when none survives).
    Writes OUT/robot.json."""

    spec: Annotated[str, AfterValidator(_robot)] = Field(
        description=f"A shipped robot ({SHIPPED_ROBOTS}) or the path of a robot spec .json.",
        json_schema_extra={"argument": True},
    )
    zero_policy_worlds: int = Field(8, ge=1, le=1_000, description="Nominal worlds the zero policy plays.")
    out: OutDir = Field(None, description="Folder for robot.json (default runs/boundary/robot-<spec name>).")

    @model_validator(mode="before")
    @classmethod
    def _out_default(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("out") is None and data.get("spec"):
            data = {**data, "out": RUNS / f"robot-{Path(str(data['spec'])).stem}"}
        return data


class TrainRequest(Request):
    """Train the linear walking policy of a config a robot's spec folder names, with seeded ARS; write
    <name>.npz, <name>.json (config and learning curve) and <name>.timing.json into OUT."""

    robot: Annotated[Optional[str], AfterValidator(_robot)] = Field(
        None,
        description=f"Robot whose spec folder names the config: a shipped robot ({SHIPPED_ROBOTS}) or the path of "
        "a robot spec .json, its configs in <name>.policies.json beside it (default: the shipped robot whose "
        "folder names the config).",
    )
    config: str = Field(
        "v0",
        description=f"Training config: {train_help()}; with --robot, one its spec folder names.",
    )
    out: Annotated[OutDir, AfterValidator(_not_a_run)] = Field(
        CHECKPOINT_DIR, description="Folder for the checkpoint files (default: the committed checkpoints' folder)."
    )
    iterations: Optional[int] = Field(
        None, ge=1, le=100_000, description="ARS iterations instead of the config's (for quick trials)."
    )
    threads: int = Field(2, ge=1, le=256, description="Simulation threads.")

    @field_validator("config")
    @classmethod
    def _named_by_the_robot(cls, v: str, info: ValidationInfo) -> str:
        if "robot" not in info.data:  # the robot was refused: its own line says why
            return v
        robot = info.data["robot"]
        names = list(train_configs(robot))
        if v not in names:
            where = "the shipped robots' spec folders name" if robot is None else f"{policies_path(robot)} names"
            raise ValueError(f"unknown config {v!r}; {where} {', '.join(names) or 'none'}")
        return v


LEARN_RECIPES = Literal["go1_v2", "go1_v3", "go1_v4", "go1_v5"]  # learn.recipes.RECIPES


def _hidden(v: str) -> str:
    """Hidden layer widths, comma-separated (e.g. 256,128,128)."""
    try:
        sizes = [int(x) for x in v.split(",")]
    except ValueError:
        raise ValueError(f"expected comma-separated layer widths such as 256,128,128, got {v!r}") from None
    if not 1 <= len(sizes) <= 4 or not all(1 <= n <= 1024 for n in sizes):
        raise ValueError(f"1 to 4 layers of 1 to 1,024 units, got {v!r}")
    return ",".join(map(str, sizes))


def _learn_init(v: Path | None) -> Path | None:
    """A finished or running `boundary learn` folder (its checkpoint.pt) whose network starts this run."""
    if v is not None and not (Path(v) / "checkpoint.pt").is_file():
        raise ValueError(f"{v} holds no checkpoint.pt (expected the --out folder of a `policylab boundary learn` run)")
    return v


class LearnRequest(Request):
    """Learn a Go1 network with PPO (go1_imu spec: the common trainers' observation, position actuators
    around the home pose) to walk forward at the recipe's command, with friction (go1_v3: also lateral
    pushes) drawn from the recipe's training distribution. Writes OUT/checkpoint.pt (resumable: rerun
    the same command after a kill), OUT/policy.onnx (the actor, the raw 48-value observation in), learn.json
    and report.html with the training curves and the network's nominal survival and speed."""

    SIZE_FIELDS = ("envs", "rollout")

    out: OutDir = Field(None, description="Folder of the run (default runs/boundary/learn-<recipe>).")
    recipe: LEARN_RECIPES = Field(
        "go1_v2",
        description="Training distribution: go1_v2 (friction uniform in "
        "0.4-1.0, no pushes, 0.5 m/s forward), go1_v3 (go1_v2's plus lateral pushes of up "
        "to 1.2 body weights for 0.5 s every 1-3 s), go1_v4 (the common trainers' random "
        "joystick commands, friction 0.2-1.0, lateral pushes from the start whose upper "
        "end ramps to 1.5 body weights over the first 30% of updates) or go1_v5 (go1_v4's "
        "with frictions down to 0.05).",
    )
    init: Annotated[Optional[Path], AfterValidator(_learn_init)] = Field(
        None,
        description="Start from the network of this `boundary learn` folder (a retrain, e.g. go1_v3 from "
        "go1_v2's run) instead of fresh weights.",
    )
    steps: int = Field(
        52_428_800,
        ge=1,
        le=10**10,
        description="Budget in agent steps (rounded down to whole updates of --envs x --rollout).",
    )
    envs: int = Field(
        1024,
        ge=1,
        le=65_536,
        description="Go1 worlds played at once; a world that falls or ends "
        "its episode restarts on a fresh seed of the boundary.learn range.",
    )
    rollout: int = Field(32, ge=1, le=4096, description="Control steps per world between updates.")
    hidden: Annotated[str, AfterValidator(_hidden)] = Field(
        "256,128,128", description="Hidden layer widths of the actor and of the critic."
    )
    init_std: float = Field(
        0.25, gt=0.0, le=2.0, description="Initial standard deviation of the Gaussian policy (learned per action)."
    )
    seed: int = Field(
        0,
        ge=0,
        le=MAX_SEED,
        description="Seed of the initial weights, the sampled actions and the "
        "minibatches (episode seeds come from the boundary.learn range).",
    )
    threads: int = Field(
        2,
        ge=1,
        le=256,
        description="Threads: the worlds are split into this many shards, each "
        "played and learned on its own thread; a run is deterministic for a given seed and thread "
        "count.",
    )
    # the PPO options (`policylab.learning.options`), with this study's defaults
    lr: LearningRate = 3e-4
    epochs: Epochs = 4
    minibatch: Minibatch = 8192
    gamma: Gamma = Field(0.97, description="Discount per control step.")
    gae_lambda: GaeLambda = 0.95
    clip: Clip = 0.2
    ent_coef: EntCoef = 0.01
    vf_coef: VfCoef = 0.5
    max_grad_norm: MaxGradNorm = 1.0
    checkpoint_every: int = Field(
        20, ge=1, le=100_000, description="Write OUT/checkpoint.pt every K updates (and after the last)."
    )
    eval_worlds: int = Field(
        256,
        ge=0,
        le=100_000,
        description="Nominal worlds (friction 1.0, no push, 5 s) on "
        "which the learned network is judged at the end (0: skip).",
    )
    ship_as: Optional[str] = Field(
        None,
        pattern=r"^go1_v([2-9]|[1-9][0-9]+)$",
        description="Also commit the "
        "network as this checkpoint name (go1_v2, go1_v3, ...): <name>.onnx with its "
        "training record <name>.json and <name>.timing.json in the committed "
        "checkpoints' folder, where every boundary command finds it by name.",
    )

    @model_validator(mode="before")
    @classmethod
    def _out_default(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("out") is None:
            data = {**data, "out": RUNS / f"learn-{data.get('recipe') or 'go1_v2'}"}
        return data

    def needs(self) -> tuple[int, int]:
        """Memory: one rollout's samples (52 observation floats, 12 actions, 6 per-sample floats) twice over,
        plus the worlds' MuJoCo data; disk: the checkpoint."""
        samples = self.envs * self.rollout
        return 2 * samples * (52 + 12 + 6) * 4 + self.envs * 200_000, self.envs * 4_000 + 10_000_000


class CalibrateRequest(Request):
    """The data behind the frozen failure thresholds: nominal minima and the poses of toppled robots."""

    robot: RobotSpec = Field(None, description=ROBOT_HELP)
    checkpoint: CheckpointSpec = Field(None, description=CHECKPOINT_HELP)
    n_nominal: int = Field(256, ge=1, le=10_000, description="Nominal worlds (friction 1.0, no push).")
    n_pushed: int = Field(
        16, ge=1, le=1_000, description="Worlds per hard-push corner (mu 0.05/0.5/1.0 x push 50-200 % of body weight)."
    )
    out: OutDir = Field(RUNS / "calibration", description="Folder for calibration.json.")

    def config(self, checkpoint: dict) -> dict:
        return {
            "checkpoint": checkpoint,
            "n_nominal": self.n_nominal,
            "n_pushed": self.n_pushed,
            **({"robot": self.robot} if self.robot else {}),
        }


class SweepRequest(Request):
    """Play the checkpoint in every world of the grid (friction x push, or any two axes with --rows and
    --cols); each rollout becomes a store record. Resumable: worlds already in the store are skipped.
    Without options: go1_v4 over 20 frictions x 20 pushes x 16 seeds, the records into ./runs/boundary/store
    and sweep.json into ./runs/boundary/store-sweep-go1_v4 (relative to the current folder)."""

    SIZE_FIELDS = ("n_mu", "n_push", "seeds_per_cell")

    robot: RobotSpec = Field(None, description=ROBOT_HELP)
    checkpoint: CheckpointSpec = Field(None, description=CHECKPOINT_HELP)
    command: Command = Field(
        None,
        description="The command vector for the robot's command term, comma-separated "
        "(e.g. 0.5,0,0 for vx, vy, yaw rate), instead of the command a committed checkpoint "
        "was trained for (its record; go1_v4: 0.5,0,0), else the spec's value; only for a spec "
        "with a command term. Part of the protocol and so of the rollout keys; later stages "
        "re-simulate with it.",
    )
    mu_min: float = Field(
        DEFAULT_MU[0], ge=MU_RANGE[0], le=MU_RANGE[1], description=f"Lowest friction (resolution {MU_RES})."
    )
    mu_max: float = Field(DEFAULT_MU[1], ge=MU_RANGE[0], le=MU_RANGE[1], description="Highest friction.")
    n_mu: int = Field(
        DEFAULT_MU[2],
        ge=1,
        le=axis_size(MU_RANGE, MU_RES),
        description="Friction values, evenly spaced from --mu-min to --mu-max.",
    )
    push_min: float = Field(
        DEFAULT_PUSH[0],
        ge=PUSH_RANGE[0],
        le=PUSH_RANGE[1],
        description=f"Smallest push, % bodyweight (resolution {PUSH_RES:g}).",
    )
    push_max: float = Field(
        DEFAULT_PUSH[1], ge=PUSH_RANGE[0], le=PUSH_RANGE[1], description="Largest push, % bodyweight."
    )
    n_push: int = Field(
        DEFAULT_PUSH[2],
        ge=1,
        le=axis_size(PUSH_RANGE, PUSH_RES),
        description="Push magnitudes, evenly spaced from --push-min to --push-max.",
    )
    seeds_per_cell: int = Field(
        DEFAULT_SEEDS_PER_CELL,
        ge=1,
        le=SWEEP_SEEDS.size,
        description="Seeds per cell (a row and column value); the whole grid must fit the "
        f"sweep's seed range ({SWEEP_SEEDS.size:,} worlds).",
    )
    push_dir: float = Field(
        DEFAULT_DIR,
        ge=-360.0,
        le=360.0,
        description="Push direction in degrees from the heading at onset (90 = left, -90 = right; resolution 5).",
    )
    push_t0: float = Field(
        DEFAULT_T0,
        ge=T0_RANGE[0],
        le=T0_RANGE[1],
        description=f"Push start in seconds (resolution 0.1); it lasts {PUSH_DURATION_S:g} s.",
    )
    rows: Optional[str] = Field(
        None,
        description="The rows' axis and values instead of friction, AXIS=LO:HI:N or "
        "AXIS=V1,V2,... (e.g. payload=0:10:11), in place of --mu-min/--mu-max/--n-mu. Axes: "
        + ", ".join(a for a in AXES if a != "push_t0")
        + " (docs/boundary.md, Perturbation "
        "axes).",
    )
    cols: Optional[str] = Field(
        None,
        description="The columns' axis and values instead of push, as --rows (e.g. "
        "push=0:200:21), in place of --push-min/--push-max/--n-push; the boundary of each "
        "row is located along it.",
    )
    set: list[str] = Field(
        [], description="An axis held at one value over the whole grid, AXIS=V (repeatable), e.g. delay=1 or slope=5."
    )
    store: SweepStore = Field(
        STORE, description="Store folder (the canonical record): new, empty, or a store to resume or add to."
    )
    out: OutDir = Field(
        None,
        description="Folder for sweep.json and timing.json (default STORE-sweep-<checkpoint name> beside the store).",
    )
    executor: ExecutorOption = "local"
    ray_address: RayAddress = None
    chunk: int = Field(400, ge=1, le=100_000, description="Worlds per task; the store is written after each chunk.")
    threads: Optional[int] = Field(
        None, ge=1, le=256, description="Simulation threads per task (default 2 with the local executor, 1 otherwise)."
    )
    workers: Optional[int] = Field(
        None, ge=1, le=1024, description="Parallel tasks for processes/ray (default: the CPU count)."
    )

    @model_validator(mode="before")
    @classmethod
    def _out_default(cls, data: Any) -> Any:
        return _default_out(data, cls, "sweep", per_store=True)

    @field_validator("mu_max", "push_max")
    @classmethod
    def _above_min(cls, v: float, info: ValidationInfo) -> float:
        lo_name = info.field_name.replace("_max", "_min")
        lo = info.data.get(lo_name)
        if lo is not None and v < lo:
            raise ValueError(f"must be at least --{lo_name.replace('_', '-')} ({lo:g})")
        return v

    @field_validator("n_mu", "n_push")
    @classmethod
    def _axis_values(cls, n: int, info: ValidationInfo) -> int:
        kind = info.field_name.removeprefix("n_")
        lo, hi = info.data.get(f"{kind}_min"), info.data.get(f"{kind}_max")
        if n > 1 and lo is not None and lo == hi:
            raise ValueError(f"{n} values need --{kind}-min below --{kind}-max (give 1 for a single value)")
        return n  # values that collide at the axis's resolution: the plan's grid (`sweep.plan`)

    @field_validator("rows", "cols")
    @classmethod
    def _grid_axis(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is None:
            return v
        kind, defaults = ("mu", DEFAULT_MU) if info.field_name == "rows" else ("push", DEFAULT_PUSH)
        if tuple(info.data.get(k) for k in (f"{kind}_min", f"{kind}_max", f"n_{kind}")) != defaults:
            raise ValueError(
                f"--{info.field_name} replaces --{kind}-min, --{kind}-max and --n-{kind}; give one or the other"
            )
        return v  # the axis and its values: the plan's grid (`sweep.plan`)


class SearchRequest(Request):
    """Locate, per row, the push at which survival crosses a level, with a 95% interval, by sequential design
    (batches where the crossing is still uncertain; a row stops at the target width or the budget). Every
    rollout goes into the store through the same loop as a sweep's, so a search and a grid share the worlds
    they have in common; a killed search started again resumes to the same bytes. Writes OUT/search.json;
    `policylab boundary report --out OUT` draws it."""

    robot: RobotSpec = Field(None, description=ROBOT_HELP)
    checkpoint: CheckpointSpec = Field(None, description=CHECKPOINT_HELP)
    rows: list[str] = Field(
        [f"friction={DEFAULT_MU[0]:.2f}:{DEFAULT_MU[1]:.2f}:{DEFAULT_MU[2]}"],
        description="A row axis and its values, AXIS=LO:HI:N or AXIS=V1,V2,... (repeat the option "
        "for several axes: the rows are every combination). Axes: "
        + ", ".join(a for a in AXES if a != "push")
        + " (docs/boundary.md, Perturbation axes).",
    )
    set: list[str] = Field(
        [], description="An axis held at one value in every row, AXIS=V (repeatable), e.g. delay=1 or slope=5."
    )
    push_min: float = Field(
        PUSH_RANGE[0],
        ge=PUSH_RANGE[0],
        le=PUSH_RANGE[1],
        description="Smallest push searched, % bodyweight (default 0: a row whose survival is "
        "below the level there fails without a push).",
    )
    push_max: float = Field(
        DEFAULT_PUSH[1], ge=PUSH_RANGE[0], le=PUSH_RANGE[1], description="Largest push searched, % bodyweight."
    )
    level: float = Field(0.5, ge=0.05, le=0.95, description="Survival level whose crossing is located.")
    target_width: float = Field(
        10.0,
        gt=0.0,
        le=PUSH_RANGE[1],
        description="A row stops once its 95% interval is "
        "no wider than this, % of body weight (the default grid's push spacing).",
    )
    budget: int = Field(
        1280,
        ge=1,
        le=10_000_000,
        description="Rollouts for all rows together (default: 20% of the default grid's 6,400).",
    )
    batch: int = Field(4, ge=1, le=64, description="Rollouts a row gets per round.")
    seed_block: int = Field(
        0,
        ge=0,
        le=99,
        description="Seed block: another block draws other seeds for the same "
        "design (block 0 shares the default grid's worlds and records).",
    )
    store: SweepStore = Field(
        STORE,
        description="Store folder: new, empty, or a store to resume or add to (a grid's records there are reused).",
    )
    out: OutDir = Field(
        None, description="Folder for search.json (default STORE-search-<checkpoint name> beside the store)."
    )
    threads: int = Field(2, ge=1, le=256, description="Simulation threads.")

    @model_validator(mode="before")
    @classmethod
    def _out_default(cls, data: Any) -> Any:
        return _default_out(data, cls, "search", per_store=True)

    @field_validator("rows")
    @classmethod
    def _some_rows(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("give at least one row axis")
        return v  # the axes and their values: the plan's rows (`search.plan`)

    @field_validator("push_max")
    @classmethod
    def _above_min(cls, v: float, info: ValidationInfo) -> float:
        lo = info.data.get("push_min")
        if lo is not None and v <= lo:
            raise ValueError(f"must be above --push-min ({lo:g})")
        return v


class VerifyRequest(Request):
    """Equivalence gate: re-simulate stored worlds and compare them bitwise with their records, and play
    the checkpoint in Gymnasium's own Ant-v5 loop against the study's simulator. Exit 1 when it fails."""

    robot: RobotSpec = Field(None, description=ROBOT_HELP)
    checkpoint: CheckpointSpec = Field(
        None, description="Checkpoint whose stored sweep is re-simulated. " + CHECKPOINT_HELP
    )
    store: StoreDir = Field(STORE, description="Store folder holding the sweep.")
    sample: int = Field(32, ge=1, le=10_000, description="Stored worlds to re-simulate (evenly spread, deterministic).")
    keep_diverged: bool = Field(False, description=KEEP_DIVERGED_HELP)
    out: OutDir = Field(
        None, description="Folder for equivalence.json (default STORE-verify-<checkpoint name> beside the store)."
    )

    @model_validator(mode="before")
    @classmethod
    def _out_default(cls, data: Any) -> Any:
        return _default_out(data, cls, "verify", per_store=True)


# -- analysis -----------------------------------------------------------------------------------
class ReduceRequest(Request):
    """Kaplan-Meier survival per cell, danger heatmap data and the per-row boundary with a bootstrap
    interval, from the sweep's records in the store."""

    store: StoreDir = Field(description=STORE_HELP)
    checkpoint: SweepName = Field(
        description="The checkpoint whose sweep to reduce: its name in the store (e.g. "
        "ant_v0) or the path of the policy file it was swept with; the grid comes from the "
        "sweep's record in the store."
    )
    out: OutDir = Field(description=OUT_HELP)
    resamples: int = Field(
        2000, ge=100, le=100_000, description="Bootstrap resamples for each row's boundary interval."
    )
    seed: int = Field(0, ge=0, le=MAX_SEED, description="Seed of the bootstrap generator (with the row index).")
    rule_check: bool = Field(
        True, description="Re-apply the frozen failure rule to every stored track and count agreement with the records."
    )
    keep_diverged: bool = Field(False, description=KEEP_DIVERGED_HELP)

    def config(self) -> dict:
        return {
            "store": str(self.store.resolve()),
            "checkpoint": self.checkpoint,
            "resamples": self.resamples,
            "seed": self.seed,
            "rule_check": self.rule_check,
            **({"keep_diverged": True} if self.keep_diverged else {}),
        }  # folders reduced before the option stand


class SelectRequest(Request):
    """Choose the boundary cells and recoveries to replay from the reduction."""

    out: Annotated[OutDir, _has_stages("reduce")] = Field(description=OUT_HELP)
    n_boundary: int = Field(15, ge=0, le=1000, description="Boundary cells to replay (round-robin over friction rows).")
    n_recoveries: int = Field(
        3,
        ge=0,
        le=1000,
        description="Recovery cells (cells whose survival S to the horizon is 3/16 <= S <= 0.5; one per cell).",
    )

    def config(self) -> dict:
        return {"n_boundary": self.n_boundary, "n_recoveries": self.n_recoveries}


class ReplayRequest(Request):
    """The replay batch: selected worlds read from the store; recovery cells searched for a survivor."""

    out: Annotated[OutDir, _has_stages("reduce", "select")] = Field(description=OUT_HELP)
    verify: bool = Field(
        True,
        description="Equivalence check: simulate each replayed world again and compare it "
        "bitwise with its record (outcomes still come from the record).",
    )
    checkpoint: Optional[str] = Field(
        None,
        min_length=1,
        description="For --verify: the checkpoint (committed name "
        "or policy file path) the sweep was made with; default: the store's copy of the "
        "sweep's policy file.",
    )

    @field_validator("checkpoint")
    @classmethod
    def _only_when_verifying(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is not None and info.data.get("verify") is False:
            raise ValueError("only used with --verify")
        return v

    def config(self, checkpoint_sha256: str) -> dict:
        return {"verify": self.verify, "checkpoint_sha256": checkpoint_sha256 if self.verify else None}


class ClipsRequest(Request):
    """Render an mp4 of every replay from its stored qpos (never a new simulation)."""

    out: Annotated[OutDir, _has_stages("reduce", "replay")] = Field(description=OUT_HELP)
    width: int = Field(320, ge=32, le=1920, description="Width of each of the three camera views, pixels.")
    height: int = Field(240, ge=32, le=1080, description="Height of each view, pixels.")
    fps: int = Field(
        20,
        ge=1,
        le=120,
        description="Frames per second of the mp4 (real time: one frame per 1/fps s "
        "of record time; 4x slow motion near a failure).",
    )
    workers: int = Field(
        2,
        ge=1,
        le=64,
        description="Processes rendering the batch of clips (each with one render "
        "context); the clips do not depend on it.",
    )

    def config(self) -> dict:
        return {"width": self.width, "height": self.height, "fps": self.fps}


class RrdRequest(Request):
    """Export every replay as a rerun .rrd (plus its qpos.npz) from the stored trajectory."""

    out: Annotated[OutDir, _has_stages("reduce", "replay")] = Field(description=OUT_HELP)


class DiffRequest(Request):
    """Cell-by-cell diff of two checkpoints' sweeps: Fisher exact + Benjamini-Hochberg, boundary shift,
    shrinkage census."""

    store: StoreDir = Field(description=STORE_HELP + " Holds sweep A (and B unless --store-b is given).")
    a: SweepName = Field(
        description="Checkpoint A (before), e.g. the original policy: its name in the store or its policy file's path."
    )
    b: SweepName = Field(description="Checkpoint B (after the retrain), by name or path.")
    out: OutDir = Field(description="Folder for diff.json (then `policylab boundary report --out` it).")
    store_b: Optional[StoreDir] = Field(None, description="Store holding sweep B, when it is not --store.")
    resamples: int = Field(
        2000, ge=100, le=100_000, description="Bootstrap resamples for each row's boundary interval."
    )
    seed: int = Field(0, ge=0, le=MAX_SEED, description="Seed of the bootstrap generator.")
    q: float = Field(0.05, ge=1e-6, le=0.5, description="Benjamini-Hochberg false-discovery rate.")

    @field_validator("b")
    @classmethod
    def _not_a(cls, v: str, info: ValidationInfo) -> str:
        if v == info.data.get("a"):
            raise ValueError("checkpoints A and B are the same")
        return v

    @property
    def store_of_b(self) -> Path:
        return self.store_b or self.store

    def config(self) -> dict:
        return {
            "store": str(self.store.resolve()),
            "store_b": str(self.store_of_b.resolve()),
            "a": self.a,
            "b": self.b,
            "resamples": self.resamples,
            "seed": self.seed,
            "q": self.q,
        }


class ReportRequest(Request):
    """Write report.json and report.html (heatmaps, boundary curves, replays and clips) into OUT/report."""

    out: Annotated[OutDir, AfterValidator(_reduced_or_diff)] = Field(
        description="An analysis folder (after reduce), a diff folder or a search folder."
    )


# -- probe ----------------------------------------------------------------------------------------
PROBE_SEEDS = named_range("boundary", "probe")


def _host(host: str) -> str:
    """A loopback address this machine can listen on (an IP address or a name that resolves to loopback
    addresses only): the probe answers requests for its loopback address alone (`probe_server.Guard`)."""
    import ipaddress
    import socket

    try:
        found = {info[4][0] for info in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)}
    except (OSError, UnicodeError) as exc:
        raise ValueError(f"{host!r} is not an address to listen on ({exc})") from None
    if not all(ipaddress.ip_address(a.partition("%")[0]).is_loopback for a in found):
        raise ValueError(
            f"{host!r} is not a loopback address (127.0.0.1, ::1, localhost): the probe answers this machine only"
        )
    return host


class ProbeRequest(Request):
    """Start a local web page over the store: the map of every sweep in it, the diff of two, and any world
    (on or off the grid) simulated live for a checkpoint of the store or a policy file, with its tracks,
    a clip and .npz/.rrd downloads. Stops on Ctrl-C."""

    store: StoreDir = Field(STORE, description=STORE_HELP)
    out: OutDir = Field(
        None,
        description="Folder for the trajectories, clips and .rrd files of live runs, and the "
        "server's log (default STORE-probe beside the store).",
    )
    host: Annotated[str, AfterValidator(_host)] = Field(
        "127.0.0.1",
        min_length=1,
        max_length=255,
        description="Loopback address to listen on (127.0.0.1, ::1 or localhost).",
    )
    port: int = Field(0, ge=0, le=65535, description="Port to listen on (0: a free one, printed at start).")
    timeout: float = Field(
        120.0, ge=1.0, le=3600.0, description="Seconds a run may take before it is stopped and reported as timed out."
    )
    resamples: int = Field(500, ge=100, le=100_000, description="Bootstrap resamples for the maps' boundary intervals.")
    width: int = Field(320, ge=32, le=1920, description="Width of each of the clip's three camera views, pixels.")
    height: int = Field(240, ge=32, le=1080, description="Height of each clip view, pixels.")

    @model_validator(mode="before")
    @classmethod
    def _out_default(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("out") is None:
            store = resolved(str(data.get("store") or cls.model_fields["store"].default))
            data = {**data, "out": store.parent / f"{store.name}-probe"}
        return data

    def config(self) -> dict:
        return {"store": str(self.store.resolve())}


class ProbeRunForm(StrictModel):
    """One world the probe page asks to simulate (the page's form, not a command): the sweep whose robot plays it (`map`), the policy (a
    checkpoint swept in the store, or a policy file), the world's axes and its seed (an index into the
    `boundary.probe` seed range for a world entered by hand, or a sweep seed for a stored world)."""

    map: SweepName = Field(description="The sweep in the store whose robot plays the world.")
    checkpoint: Optional[SweepName] = Field(None, description="A checkpoint swept in the store.")
    policy_file: Optional[Annotated[str, Field(min_length=1, max_length=4096)]] = Field(
        None, description="The path of a .npz or .onnx policy file, instead of a checkpoint."
    )
    world: dict[str, float] = Field(description="The world's axes (friction, push, direction, start, ...).")
    seed_index: Optional[int] = Field(
        None,
        ge=0,
        lt=PROBE_SEEDS.size,
        description=f"Index into the boundary.probe seed range (seed {PROBE_SEEDS.base:,} + index).",
    )
    sweep_seed: Optional[int] = Field(
        None, ge=SWEEP_SEEDS.base, lt=SWEEP_SEEDS.stop, description="A sweep's seed (a stored world's)."
    )
    save: bool = Field(False, description="Write the rollout into the store (through ensure) when it is not there.")

    @model_validator(mode="after")
    def _one_of_each(self) -> ProbeRunForm:
        if (self.checkpoint is None) == (self.policy_file is None):
            raise ValueError("give either a checkpoint of the store or a policy file")
        if (self.seed_index is None) == (self.sweep_seed is None):
            raise ValueError("give either a probe seed index or a stored world's sweep seed")
        return self
