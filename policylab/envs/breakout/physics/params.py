"""Named parameters of the physics model (`ShadowParams`), and their packing into the record its kernel reads.

Units: screen pixels of the 210x160 frame (y down; the ball's position is its top-left corner), speeds in px per
frame; an agent step is `frameskip` frames."""

from __future__ import annotations

import typing
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from policylab.config import StrictModel
from policylab.envs.breakout.key_versions import unkeyed_fields
from policylab.envs.breakout.ram import RAM_FRAME_COUNTER
from policylab.hashing import hash_obj

MAX_BRICK_ROWS = 8
TABLE_LEN = 32  # longest table (zones, serves, speeds) the kernel accepts
CONTROL_LEN = 512  # longest paddle-controller table


class ShadowParams(StrictModel):
    """Every rule of one physics-model world. A preset file sets the fields it changes; the defaults are a
    rough Atari start."""

    name: str = Field("custom", description="preset name: a label, not part of the physics (`physics`, `digest`)")
    # --- protocol-level mechanics
    frameskip: int = Field(4, ge=1, le=16, description="frames simulated per agent step")
    sticky_prob: float = Field(0.25, ge=0.0, lt=1.0, description="per-frame chance the previous action repeats (ALE)")
    lives: int = Field(5, ge=1, le=9)
    serve_rule: Literal["fire", "auto"] = Field(
        "fire", description="fire: FIRE serves a waiting ball (ALE); auto: the ball is served by itself (Go)"
    )
    serve_delay: int = Field(0, ge=0, description="frames after a life loss (or reset) before a serve is possible")
    model: Literal["physics"] = Field(
        "physics",
        description="physics: the parametric simulator these fields describe (the ROM model has its own "
        "parameters, envs/breakout/rom/params.py)",
    )
    rng: Literal["splitmix", "ale"] = Field(
        "splitmix",
        description="splitmix: each env's own splitmix64 stream (sticky draws only when sticky_prob > 0, "
        "random serves); ale: ALE's MT19937 stream seeded with the episode seed, two outputs "
        "per frame in ALE's order (envs/breakout/ale_random.py), so seed s repeats the frames ALE "
        "repeats on seed s; needs serve_pick 'frame' (ALE draws nothing else)",
    )
    # --- field geometry (ball top-left corner coordinates)
    field_left: float = Field(8.0, description="smallest ball x (inner edge of the left wall)")
    field_right: float = Field(152.0, description="inner edge of the right wall; ball x <= field_right - ball_w")
    field_top: float = Field(32.0, description="smallest ball y (bottom of the top wall)")
    lost_y: float = Field(209.0, description="a ball whose y reaches this is lost")
    ball_w: float = Field(2.0, gt=0)
    ball_h: float = Field(4.0, gt=0)
    report_integer: bool = Field(True, description="observations report floor(position), as ALE's RAM does")
    # --- bricks
    brick_rows: int = Field(6, ge=1, le=MAX_BRICK_ROWS)
    brick_cols: int = Field(18, ge=1, le=32)
    brick_top: float = 57.0
    brick_left: float = 8.0
    brick_w: float = Field(8.0, gt=0)
    brick_h: float = Field(6.0, gt=0)
    row_points: list[int] = Field(
        default_factory=lambda: [7, 7, 4, 4, 1, 1], max_length=MAX_BRICK_ROWS, description="points per row, top first"
    )
    brick_cooldown: int = Field(0, ge=0, description="frames after a brick hit during which no brick can be hit")
    # --- paddle
    paddle_y: float = 189.0
    paddle_h: float = 4.0
    paddle_width: float = Field(16.0, gt=0)
    paddle_width_small: float = Field(8.0, gt=0, description="width after the ball first reaches the top wall")
    shrink_on_top: bool = True
    paddle_min_x: float = 8.0
    paddle_max_x: float = 144.0
    paddle_start_x: float = 99.0
    paddle_overshoot_left: float = Field(0.0, ge=0, description="controller travel hidden beyond the left stop")
    paddle_overshoot_right: float = Field(0.0, ge=0, description="controller travel hidden beyond the right stop")
    paddle_accel: float = Field(2.0, gt=0, description="speed gained per frame while LEFT/RIGHT is held")
    paddle_decel: float = Field(2.0, gt=0, description="speed lost per frame while no direction is held")
    paddle_max_speed: float = Field(5.6, gt=0, description="px per frame")
    paddle_integer: bool = Field(True, description="paddle positions are whole pixels")
    # --- ALE's paddle controller (used when paddle_control_table is non-empty; replaces accel/decel/max_speed)
    paddle_control_table: list[float] = Field(
        default_factory=list,
        max_length=CONTROL_LEN,
        description="the game's paddle target x by controller value: entry k holds the target for "
        "u in [k/res, (k+1)/res); empty = the accel/brake paddle model",
    )
    paddle_control_res: float = Field(8.0, gt=0, description="table entries per controller step")
    paddle_control_start: float = Field(0.0, ge=0, description="controller value u at reset (in steps)")
    paddle_control_max: float = Field(0.0, ge=0, description="controller travel: u is clamped to [0, max]")
    paddle_overlap_rule: bool = Field(
        False,
        description="True (ALE): the falling ball bounces on any frame it overlaps the paddle rows and keeps "
        "its y; False: swept contact, the ball is put back on top of the paddle",
    )
    paddle_chase: float = Field(
        0.5, gt=0, le=1, description="per frame the paddle moves floor(chase * (last frame's target - x))"
    )
    paddle_hit_inset: float = Field(
        0.0, description="the ball bounces when its span overlaps [paddle_x + inset, paddle_x + width - inset]"
    )
    # --- ball speeds
    paddle_bounce_y: float = Field(1.5, gt=0, description="upward speed (px/frame) after a paddle bounce at level 0")
    level_scale: list[float] = Field(
        default_factory=lambda: [1.0, 1.33, 2.28],
        min_length=1,
        max_length=TABLE_LEN,
        description="vertical speed multiplier per speed level",
    )
    level_hits: list[int] = Field(
        default_factory=lambda: [4, 12],
        max_length=TABLE_LEN,
        description="paddle-hit counts (per ball) that raise the level by one",
    )
    fast_rows: int = Field(2, ge=0, description="hitting one of the top `fast_rows` rows sets the top speed level")
    zone_vx: list[float] = Field(
        default_factory=lambda: [-2.0, -1.5, -1.0, -0.5, 0.5, 1.0, 1.5, 2.0],
        min_length=1,
        max_length=TABLE_LEN,
        description="horizontal speed after a paddle bounce, by equal zones of the hit window, left to right",
    )
    serve_y: float = 123.0
    serve_choices: list[tuple[float, float]] = Field(
        default_factory=lambda: [(16.0, 1.0), (78.0, -1.0), (80.0, 1.0), (142.0, -1.0)],
        min_length=1,
        max_length=TABLE_LEN,
        description="(x, vx) pairs; `serve_pick` says which one a serve takes",
    )
    serve_pick: Literal["random", "frame"] = Field(
        "random",
        description="random: each serve draws a pair uniformly from the env's RNG stream; frame: pair "
        "k = (frames since reset) mod len(serve_choices), as ALE's game reads its frame counter "
        f"ram[{RAM_FRAME_COUNTER}] & 3 on the frame FIRE serves",
    )
    serve_vy: float = Field(1.0, description="vertical serve speed (positive = downward)")
    # --- ALE's ball logic (decoded from RAM traces, README.md); used when ball_rule == "ale"
    ball_rule: Literal["legacy", "ale"] = Field(
        "legacy",
        description="legacy: mirror at walls, bounce on the moved position, level/zone speeds; ale: the "
        "2600 game's order - contacts are judged on last frame's drawn positions at the start "
        "of a frame (paddle, brick, walls flip the velocity, no mirroring), then the ball moves "
        "by a fixed-point velocity chosen from hit_speed_table",
    )
    hit_speed_table: list[tuple[float, float, float, float]] = Field(
        default_factory=list,
        max_length=TABLE_LEN,
        description="ale rule: [shallow |vx|, shallow |vy|, steep |vx|, steep |vy|] px/frame after the k-th paddle hit "
        "of a ball (entry k-1; the last entry repeats)",
    )
    top_speed: tuple[float, float] = Field(
        (2.0, 3.375),
        description="ale rule: [|vx|, |vy|] after a brick of the top `fast_rows` rows; kept until the next serve",
    )
    bounce_sections: list[int] = Field(
        default_factory=list,
        max_length=TABLE_LEN,
        description="ale rule: outgoing section per hit offset floor(ball x) - paddle x (scaled to a 16 px paddle), "
        "from offset bounce_offset_min: -2 shallow left, -1 steep left, 1 steep right, 2 shallow right",
    )
    bounce_offset_min: int = Field(-1, description="hit offset of bounce_sections[0]")
    bounce_nudge_offset: int = Field(
        -99,
        description="ale rule: a paddle hit at this offset also shifts the ball bounce_nudge_px against its "
        "incoming horizontal direction (measured: offset 6, 4 px)",
    )
    bounce_nudge_px: float = Field(0.0, description="see bounce_nudge_offset")
    brick_contact_dx: float = Field(
        0.0, description="ale rule: bricks are judged against the ball's columns [x + dx, x + dx + brick_contact_w)"
    )
    brick_contact_w: float = Field(2.0, gt=0, description="see brick_contact_dx")
    brick_contact_dy: float = Field(
        0.0,
        description="ale rule: bricks are judged against the ball's rows [y - dy, y - dy + ball_h) (the game's "
        "brick collision sits this many lines above the screen position of the ball)",
    )
    brick_contact_h: float = Field(
        0.0,
        ge=0,
        description="ale rule: lines of the ball judged against bricks, from y - brick_contact_dy (0 = ball_h; "
        "the traces select the removed brick by the single line y - 2: 264 of 266 rising removals)",
    )
    brick_solid_h: float = Field(
        0.0,
        ge=0,
        description="ale rule: lines of each brick band (from its top) that collide (0 = brick_h; the traces "
        "show the bottom line of each 6-line band passed without a hit)",
    )
    brick_rearm_on_bounce: bool = Field(
        False,
        description="ale rule: after a brick, no brick collides until the ball turns on the paddle or the "
        "ceiling (replaces brick_cooldown; ALE traces: every one of 306 consecutive removals had one "
        "of the two in between)",
    )

    @model_validator(mode="after")
    def _consistent(self) -> ShadowParams:
        if len(self.row_points) != self.brick_rows:
            raise ValueError(f"row_points needs {self.brick_rows} entries (one per brick row)")
        if len(self.level_hits) > len(self.level_scale) - 1:
            raise ValueError("level_hits may name at most len(level_scale) - 1 thresholds")
        if self.field_right - self.ball_w <= self.field_left:
            raise ValueError("field_right - ball_w must exceed field_left")
        if self.paddle_max_x < self.paddle_min_x:
            raise ValueError("paddle_max_x must be >= paddle_min_x")
        if any(v not in (-2, -1, 1, 2) for v in self.bounce_sections):
            raise ValueError("bounce_sections holds entries from -2, -1, 1, 2")
        if self.ball_rule == "ale" and not (self.hit_speed_table and self.bounce_sections):
            raise ValueError("ball_rule 'ale' needs hit_speed_table and bounce_sections")
        if self.rng == "ale" and self.serve_pick != "frame":
            raise ValueError("rng 'ale' needs serve_pick 'frame': ALE's stream only decides sticky actions")
        return self

    def physics(self) -> dict:
        """Every rule of the world, without its name: two presets with equal physics are one world.

        A field added after stores were keyed is left out while it holds the value every world had before
        it existed (`key_versions.unkeyed_fields`), so those worlds keep their digest."""
        return self.model_dump(exclude={"name"} | unkeyed_fields(self))

    def digest(self) -> str:
        """Content hash of the physics (the name left out), part of every shadow rollout's key."""
        return hash_obj(self.physics())

    def kernel_record(self) -> np.void:
        """The kernel's first argument (`kernel_params`)."""
        return kernel_params(self)


# --- the kernel's view: one numpy record, its layout derived from the fields above. A scalar keeps its type
# (bool, int64, float64); a Literal is one bool per choice, `<field>_<choice>`; a tuple is a fixed-size array;
# a list is an array of its declared max_length, zero-padded, its length in `n_<field>`. The layout is part of
# the record's numba type, so a changed declaration compiles the kernels afresh rather than reusing a cache.
_NUMPY = {bool: np.bool_, int: np.int64, float: np.float64}
KERNEL_FIELDS = {k: v for k, v in ShadowParams.model_fields.items() if k != "name"}  # the physics


def _kernel_columns(name: str, info) -> list[tuple]:
    """The record columns of one field: (name, dtype) or (name, dtype, shape)."""
    ann = info.annotation
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin is Literal:
        return [(f"{name}_{choice}", np.bool_) for choice in args]
    if origin is tuple:
        return [(name, _NUMPY[args[0]], (len(args),))]
    if origin is list:
        cap = next(m.max_length for m in info.metadata if getattr(m, "max_length", None) is not None)
        item = args[0]  # a scalar or a fixed tuple of them
        inner = typing.get_args(item) if typing.get_origin(item) is tuple else ()
        base, shape = (inner[0], (cap, len(inner))) if inner else (item, (cap,))
        return [(name, _NUMPY[base], shape), (f"n_{name}", np.int64)]
    if ann not in _NUMPY:
        raise TypeError(f"ShadowParams.{name}: no kernel column for {ann} (bool, int, float, Literal, tuple, list)")
    return [(name, _NUMPY[ann])]


KERNEL_DTYPE = np.dtype(
    [col for name, info in KERNEL_FIELDS.items() for col in _kernel_columns(name, info)], align=True
)


def kernel_params(p: ShadowParams) -> np.void:
    """`p` packed into one KERNEL_DTYPE record, the kernels' first argument (read as `p.<field>`)."""
    rec = np.zeros((), dtype=KERNEL_DTYPE)
    for name, info in KERNEL_FIELDS.items():
        value = getattr(p, name)
        origin = typing.get_origin(info.annotation)
        if origin is Literal:
            for choice in typing.get_args(info.annotation):
                rec[f"{name}_{choice}"] = value == choice
        elif origin is list:
            rec[f"n_{name}"] = len(value)
            if value:
                rec[name][: len(value)] = value
        else:
            rec[name] = value
    return rec[()]
