"""The compiled half of the vector env: N games stepped, preprocessed and frame-stacked in one numba call.

Bytes equal to ale-py's `AtariVectorEnv`: docs/breakout.md, "Vector env"; the numba cache: its "Module notes"."""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from policylab.envs.breakout import ale_random, ram
from policylab.envs.breakout.rom import kernel as rom_kernel
from policylab.envs.breakout.rom import render as rom_render
from policylab.envs.breakout.rom.ale_interface import applied_frame

SRC_H, SRC_W = 210, 160


def area_table(ssize: int, dsize: int) -> list[tuple[int, int, np.float32]]:
    """OpenCV's `computeResizeAreaTab` for one axis: (destination, source, float32 weight) tuples, destinations
    ascending and sources ascending within each, from OpenCV's double-precision cell edges."""
    scale = 1.0 / (dsize / ssize)  # OpenCV: scale = 1 / inv_scale, inv_scale = dsize / ssize
    out = []
    for dx in range(dsize):
        fsx1 = dx * scale
        fsx2 = fsx1 + scale
        cell = min(scale, ssize - fsx1)
        sx1, sx2 = int(np.ceil(fsx1)), int(np.floor(fsx2))
        sx2 = min(sx2, ssize - 1)
        sx1 = min(sx1, sx2)
        if sx1 - fsx1 > 1e-3:
            out.append((dx, sx1 - 1, np.float32((sx1 - fsx1) / cell)))
        for sx in range(sx1, sx2):
            out.append((dx, sx, np.float32(1.0 / cell)))
        if fsx2 - sx2 > 1e-3:
            out.append((dx, sx2, np.float32(min(min(fsx2 - sx2, 1.0), cell) / cell)))
    return out


def resize_tables(height: int, width: int):
    """The x and y tables as arrays: (source index, destination index) int64 and weights float32; plus, per
    destination row, the range of its y-table entries."""
    xt, yt = area_table(SRC_W, width), area_table(SRC_H, height)
    xi = np.array([(s, d) for d, s, _ in xt], dtype=np.int64)
    xw = np.array([w for _, _, w in xt], dtype=np.float32)
    yi = np.array([(s, d) for d, s, _ in yt], dtype=np.int64)
    yw = np.array([w for _, _, w in yt], dtype=np.float32)
    ystart = np.searchsorted(yi[:, 1], np.arange(height + 1)).astype(np.int64)
    return xi, xw, yi, yw, ystart


# Drawing-relevant RAM beyond the ball and paddle position: the wall, the paddle pattern, the colours and their
# shade, the digit pointers, the score mask and the pointers the frame was drawn with.
STATIC_BYTES = np.array(
    list(range(ram.RAM_WALL_END))
    + [ram.RAM_PADDLE_GFX]
    + list(range(ram.RAM_COLOUR_SHADE, ram.RAM_COLOURS + 10))
    + list(range(ram.RAM_DIGITS, ram.RAM_DIGITS + 10))
    + [ram.RAM_SHOW_SCORE, rom_kernel.SHOWN],
    dtype=np.int64,
)


# The kernels' arguments, bundled by what they are; the env builds each bundle once and passes the same one on
# every call (numba takes a tuple of arrays by reference to each array, a named tuple's fields by name).
def plain(*bundles: tuple) -> tuple[tuple, ...]:
    """The bundles as the env passes them to a kernel: plain tuples, which numba's dispatcher types in C (a named
    tuple it types in Python, some 2 us a bundle on every call: a tenth of a step of 8 envs); the kernel names
    them again on entry (`_named`)."""
    return tuple(tuple(b) for b in bundles)


class Games(NamedTuple):
    """Each env's own state, every array indexed by env first: what the kernels advance."""

    state: np.ndarray  # (n, NI) int64: the exact model's state row (`rom.kernel`)
    pairs: np.ndarray  # (n, 2, NI) int64: the max-pool's two slots
    counters: np.ndarray  # (n, NC) int64: `EP_FRAMES`, `FRAMES`, `DONE`, `STEP`, `RESET_FRAMES`
    noop_mt: np.ndarray  # the noop stream (MT19937, `ale_random`)
    sticky_mt: np.ndarray  # ALE's sticky stream and its decisions drawn ahead (`ale_random.new_state`)
    sticky_buf: np.ndarray
    still: np.ndarray  # (n, 210, 160) uint8: the still layer (`update_still`)
    seeds: np.ndarray  # (n,) int64: the seed the next reset takes (-1: none)
    actions: np.ndarray  # (n,) int64: the ALE action of the next step
    paddle_steps: np.ndarray  # (n,) int64: and its paddle step
    heads: np.ndarray  # (n,) int64: the slot of `Results.obs` that holds the env's newest frame
    frame: np.ndarray  # (n, H, W, channels) uint8: the newest frame, drawn on in place (the head slot holds a copy)
    band: np.ndarray  # (n,) int64: the slot of `Memo.bands` equal to the env's still rows around the paddle (-1: none)


class Config(NamedTuple):
    """The env's settings (ale-py's keywords)."""

    sticky: float  # repeat_action_probability
    frameskip: int
    max_frames: int  # truncation, in frames of agent steps
    noop_max: int
    fire_reset: bool
    maxpool: int  # the frames pooled with the newest: 1, or 0 at frameskip 1 or without max-pool
    clip: bool  # rewards clipped to their sign
    life_mode: int  # `LIVES_IGNORED`, `LIFE_LOSS_INFO` or `EPISODIC_LIFE`
    same_step: bool  # SameStep autoreset (else NextStep or Disabled)


class Screen(NamedTuple):
    """What the screen is drawn and resized with (`screen_tables`), read only."""

    rom: np.ndarray  # the cartridge's bytes, int64 (`render.draw_row`)
    colours: np.ndarray  # the output value of a colour byte: one row per channel (the SB3 kernel: of a pair)
    static: np.ndarray  # `STATIC_BYTES`
    xi: np.ndarray  # the resize's tables (`resize_tables`)
    xw: np.ndarray
    yi: np.ndarray
    yw: np.ndarray
    ystart: np.ndarray
    xstart: np.ndarray  # the per-pixel update's (`pixel_tables`)
    dyr: np.ndarray
    dxr: np.ndarray


class Memo(NamedTuple):
    """What the kernels drew once and look up again (`new_memo`): reset observations, keyed by the state they show
    (`_reset_one`), and the output rows around the paddle, keyed by the paddle in both pooled frames (`_paddle_band`)."""

    keys: np.ndarray  # (MEMO_SLOTS, NI) int64, -1: no state
    frames: np.ndarray  # (MEMO_SLOTS, H, W, channels) uint8
    bands: np.ndarray  # (BAND_SLOTS, rows, 160) uint8: distinct still rows around the paddle (`_intern_band`)
    bands_n: np.ndarray  # (1,) int64: how many slots of `bands` are taken
    paddle_keys: np.ndarray  # (PADDLE_SLOTS,) int64, -1: none (`_paddle_band`)
    paddle_rows: np.ndarray  # (PADDLE_SLOTS, rows, W) uint8: one channel's output rows around the paddle


class Results(NamedTuple):
    """What a call returns per env: the stacks (updated in place), the step's outcome and ale-py's info."""

    obs: np.ndarray  # (n, stack, H, W, channels) uint8, C-contiguous: each env's frames as a ring (`Games.heads`)
    final_obs: np.ndarray  # SameStep: an ended episode's last stack (else empty)
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    lives: np.ndarray
    frame_number: np.ndarray
    episode_frame_number: np.ndarray


class Work(NamedTuple):
    """The kernels' working arrays (`step_scratch`), made once by the env so that the step kernel allocates
    nothing."""

    cbuf: np.ndarray  # a source row's colour bytes
    gbuf: np.ndarray  # a pooled gray line, the one held (`line_sums`) and the span's held (`_redo_span`)
    hbuf: np.ndarray  # the vertical sums, and the held line's horizontal sums
    last_pair: np.ndarray  # the pool's slots before the step
    m_slot: np.ndarray  # the slot the step's frames left (an ended step's pool)
    lo: np.ndarray  # per output row, the span to redo (`draw_changed`)
    hi: np.ndarray
    redone: np.ndarray  # per output row, redrawn whole in this step
    unused: np.ndarray  # the noop stream's buffer of drawn-ahead decisions for `mt_seed`: it has none


class Canvas(NamedTuple):
    """One channel of one env's newest frame, as drawn: the channel's value of each colour byte, the env's
    still layer and the (H, W) plane drawn into."""

    gray: np.ndarray
    still: np.ndarray
    out: np.ndarray


@intrinsic
def move_bytes(typingctx, dst, dst_at, src, src_at, count):
    """`count` bytes from flat offset `src_at` of the C-contiguous uint8 array `src` to flat offset `dst_at` of `dst`
    (the two may be one array, the ranges may overlap): one `memmove`, which moves the bytes several times faster
    than a loop compiled here. The caller keeps the ranges inside the arrays."""
    sig = types.void(dst, types.intp, src, types.intp, types.intp)

    def codegen(context, builder, signature, args):
        d, d_at, s, s_at, n = args
        dptr = context.make_array(signature.args[0])(context, builder, d).data
        sptr = context.make_array(signature.args[2])(context, builder, s).data
        cgutils.raw_memmove(builder, builder.gep(dptr, [d_at]), builder.gep(sptr, [s_at]), n, 1)

    return sig, codegen


@intrinsic
def stream_bytes(typingctx, dst, dst_at, src, src_at, count):
    """`move_bytes` for ranges that do not overlap, written past the cache (non-temporal stores, 16 bytes at a
    time from the first 16-byte boundary of the destination): for the caller's new arrays, which this process
    does not read again, so that a write costs no read of the line first. `store_fence` must follow before the
    arrays are handed over."""
    sig = types.void(dst, types.intp, src, types.intp, types.intp)

    def codegen(context, builder, signature, args):
        d, d_at, s, s_at, n = args
        dptr = builder.gep(context.make_array(signature.args[0])(context, builder, d).data, [d_at])
        sptr = builder.gep(context.make_array(signature.args[2])(context, builder, s).data, [s_at])
        word = ir.Constant(n.type, 16)
        misaligned = builder.and_(
            builder.sub(word, builder.and_(builder.ptrtoint(dptr, n.type), ir.Constant(n.type, 15))),
            ir.Constant(n.type, 15),
        )
        head = builder.select(builder.icmp_signed("<", misaligned, n), misaligned, n)
        cgutils.raw_memcpy(builder, dptr, sptr, head, 1)
        vec = ir.VectorType(ir.IntType(8), 16).as_pointer()
        words = builder.sdiv(builder.sub(n, head), word)
        hint = builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)])
        with cgutils.for_range(builder, words) as loop:
            at = builder.add(head, builder.mul(loop.index, word))
            value = builder.load(builder.bitcast(builder.gep(sptr, [at]), vec), align=1)
            store = builder.store(value, builder.bitcast(builder.gep(dptr, [at]), vec), align=16)
            store.set_metadata("nontemporal", hint)
        done = builder.add(head, builder.mul(words, word))
        cgutils.raw_memcpy(builder, builder.gep(dptr, [done]), builder.gep(sptr, [done]), builder.sub(n, done), 1)

    return sig, codegen


@intrinsic
def prefetch(typingctx, arr, at):
    """Ask the core to bring the cache line holding byte `at` of array `arr` into its nearest cache (x86
    `prefetcht0`): a hint that reads nothing the program sees and cannot fault, so `at` need not be checked."""
    sig = types.void(arr, types.intp)

    def codegen(context, builder, signature, args):
        a, at = args
        data = context.make_array(signature.args[0])(context, builder, a).data
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [cgutils.voidptr_t, i32, i32, i32]), "llvm.prefetch.p0"
        )
        read, nearest, data_cache = (ir.Constant(i32, v) for v in (0, 3, 1))
        builder.call(fn, [builder.gep(builder.bitcast(data, cgutils.voidptr_t), [at]), read, nearest, data_cache])

    return sig, codegen


@intrinsic
def store_fence(typingctx):
    """A full memory fence: the non-temporal stores before it (`stream_bytes`) are done and seen by any thread."""

    def codegen(context, builder, signature, args):
        builder.fence("seq_cst")

    return types.void(), codegen


@numba.njit(cache=True, _nrt=False)
def _out_row(frames, maxpool, dy, screen, work, held, canvas):
    """Output row dy of the resized frame of state b, max-pooled with a (`maxpool` >= 1) and c (`maxpool` 2),
    `frames` = (a, b, c), into the canvas. `held` is the source row whose pooled gray line and horizontal sums
    `work.gbuf[160:320]` and the second half of `work.hbuf` (2 x width) hold (-1: none); returns the row they
    hold after. Output rows share their edge rows, and most source rows repeat the one above (background, brick
    lines, glyph lines drawn twice), so a held row is neither redrawn nor summed again: its sums are the same
    float32s."""
    a, b, c = frames
    ystart, yi, yw = screen.ystart, screen.yi, screen.yw
    cbuf, gbuf, hbuf, gray, out = work.cbuf, work.gbuf, work.hbuf, canvas.gray, canvas.out
    width = out.shape[1]
    for dx in range(width):
        hbuf[dx] = np.float32(0.0)  # the vertical sum
    for j in range(ystart[dy], ystart[dy + 1]):
        sy = yi[j, 0]
        beta = yw[j]
        if sy != held:
            rom_render.draw_row(b, screen.rom, sy, cbuf)
            for x in range(SRC_W):
                gbuf[x] = gray[cbuf[x]]
            for other in range(maxpool):
                rom_render.draw_row(a if other == 0 else c, screen.rom, sy, cbuf)
                for x in range(SRC_W):
                    g = gray[cbuf[x]]
                    if g > gbuf[x]:
                        gbuf[x] = g
            line_sums(held, screen, work)
            held = sy
        for dx in range(width):
            hbuf[dx] += beta * hbuf[width + dx]
    for dx in range(width):
        out[dy, dx] = np.uint8(min(255.0, np.rint(hbuf[dx])))  # OpenCV's saturate_cast: round half to even
    return held


@numba.njit(cache=True, inline="always")
def line_sums(held, screen, work):
    """The resize's horizontal float32 sums of the pooled source line `work.gbuf[:160]` into `work.hbuf[width:]`,
    and the line kept in `gbuf[160:]`; when a line is held (`held` >= 0) and equal, its sums are there already."""
    gbuf, hbuf, xi, xw = work.gbuf, work.hbuf, screen.xi, screen.xw
    width = hbuf.shape[0] // 2
    same = held >= 0
    if same:
        for x in range(SRC_W):
            if gbuf[x] != gbuf[SRC_W + x]:
                same = False
                break
    if not same:
        for x in range(SRC_W):
            gbuf[SRC_W + x] = gbuf[x]
        for dx in range(width):
            hbuf[width + dx] = np.float32(0.0)
        for k in range(xi.shape[0]):
            v = gbuf[xi[k, 0]]
            if v != 0:  # adding 0.0 to a non-negative float32 changes nothing: the black field is skipped
                hbuf[width + xi[k, 1]] += np.float32(v) * xw[k]


@numba.njit(cache=True, _nrt=False)
def draw_full(frames, maxpool, screen, work, canvas):
    """The whole resized observation of the frames (a, b, c: see `_out_row`) into the canvas."""
    held = -1
    for dy in range(canvas.out.shape[0]):
        held = _out_row(frames, maxpool, dy, screen, work, held, canvas)


def pixel_tables(xi: np.ndarray, yi: np.ndarray, height: int, width: int):
    """For the per-pixel update: each output column's range of x-table entries, and each source row's
    (column's) first and last output row (column)."""
    xstart = np.searchsorted(xi[:, 1], np.arange(width + 1)).astype(np.int64)
    dyr = np.zeros((SRC_H, 2), dtype=np.int64)
    dxr = np.zeros((SRC_W, 2), dtype=np.int64)
    for rng, table, n in ((dyr, yi, SRC_H), (dxr, xi, SRC_W)):
        for s in range(n):
            d = table[table[:, 0] == s, 1]
            rng[s] = d.min(), d.max()
    return xstart, dyr, dxr


def screen_tables(colours: np.ndarray, height: int, width: int) -> Screen:
    """The `Screen` of an (height, width) output whose colour bytes read `colours`."""
    xi, xw, yi, yw, ystart = resize_tables(height, width)
    return Screen(
        rom_render.rom_bytes().astype(np.int64),
        np.ascontiguousarray(colours),
        STATIC_BYTES,
        xi,
        xw,
        yi,
        yw,
        ystart,
        *pixel_tables(xi, yi, height, width),
    )


@numba.njit(cache=True, inline="always")
def _span(r0, r1, c0, c1, screen):
    """The output rows (first, last) and columns (first, last) that read source rows r0..r1 and columns c0..c1
    (c1 < 320: columns from 160 on wrap to 0, and a wrapped span takes the whole row)."""
    if c1 >= SRC_W:
        if c0 >= SRC_W:
            c0, c1 = c0 - SRC_W, c1 - SRC_W
        else:
            c0, c1 = 0, SRC_W - 1
    return screen.dyr[r0, 0], screen.dyr[r1, 1], screen.dxr[c0, 0], screen.dxr[c1, 1]


@numba.njit(cache=True, inline="always")
def _mark(r0, r1, c0, c1, screen, work):
    """Widen each output row's span to redo, [lo[dy], hi[dy]] of `work`, to the output pixels that read source
    rows r0..r1 and columns c0..c1 (`_span`)."""
    dy0, dy1, x0, x1 = _span(r0, r1, c0, c1, screen)
    lo, hi = work.lo, work.hi
    for dy in range(dy0, dy1 + 1):
        lo[dy] = min(lo[dy], x0)
        hi[dy] = max(hi[dy], x1)


@numba.njit(cache=True, inline="always")
def _mark_ball(m, screen, work):
    """`_mark` the output pixels under state m's ball (2 px from `render.ball_column`)."""
    r0 = rom_kernel.BALL_ROWS[m[ram.RAM_BALL_Y], 0]
    if r0 >= 0:
        c = rom_render.ball_column(m)
        _mark(r0, rom_kernel.BALL_ROWS[m[ram.RAM_BALL_Y], 1], c, c + 1, screen, work)


NO_EDGE = (2 * SRC_W, -1)  # an empty column range, neutral to min/max


@numba.njit(cache=True, inline="always")
def _paddle_edge(old, new, side):
    """The source columns (first, last) whose paddle pixels differ between frames old and new (of one pattern
    and colour) on one side: those the paddle left or took on the left (side 0) or on the right (side 1);
    `NO_EDGE` when it did not move."""
    if old[ram.RAM_PADDLE_X] == new[ram.RAM_PADDLE_X]:
        return NO_EDGE
    width = 0
    for k in range(8):
        width += 4 * ((new[ram.RAM_PADDLE_GFX] >> k) & 1)  # the pattern's bits are contiguous (`rom.kernel.PADDLE_GFX`)
    shift = width * side
    return min(old[ram.RAM_PADDLE_X], new[ram.RAM_PADDLE_X]) - 47 + shift, max(
        old[ram.RAM_PADDLE_X], new[ram.RAM_PADDLE_X]
    ) - 48 + shift  # 8..175


@numba.njit(cache=True, inline="always")
def _paint_moving_gray(objects, r, c0, c1, gray, line, at):
    """Paint into `line[at:]` the gray of what moves (`render.moving_objects`) on row r, columns c0..c1 only:
    the ball's two pixels, then the paddle's pattern over them (`render.moving_colour`'s order)."""
    if objects[0] <= r <= objects[1]:
        for c in (objects[2], objects[2] + 1 if objects[2] < SRC_W - 1 else 0):
            if c0 <= c <= c1:
                colour = rom_render.moving_colour(objects, r, c)
                if colour >= 0:
                    line[at + c] = gray[colour]
    if objects[4] <= r <= objects[5]:
        paddle = gray[objects[8]]
        for c in range(c0, c1 + 1):  # `moving_colour`'s test, on the span's columns only
            k = c - objects[6]
            if k < 0:
                k += SRC_W
            if k < 32 and (objects[7] >> (7 - k // 4)) & 1:
                line[at + c] = paddle


@numba.njit(cache=True, inline="always")
def _same_line(p, q, moving, c0, c1, still):
    """Whether source rows p and q pool to the same line on columns c0..c1 (`_redo_span`): equal still rows there,
    no ball on either in either frame (a ball's pixels depend on the row) and each frame's paddle on both or on
    neither."""
    if p == q:
        return True
    for objects in moving:
        if objects[0] <= p <= objects[1] or objects[0] <= q <= objects[1]:
            return False
        if (objects[4] <= p <= objects[5]) != (objects[4] <= q <= objects[5]):
            return False
    for c in range(c0, c1 + 1):
        if still[p, c] != still[q, c]:
            return False
    return True


@numba.njit(cache=True, inline="always")
def _redo_span(moving, maxpool, dy, lo, hi, held, screen, work, canvas):
    """Recompute output pixels dy, lo..hi of the pair of frames whose moving objects are `moving` = (`moving_a`,
    `moving_b`) (`render.moving_objects`) and whose still layer is the canvas's, with `_out_row`'s float32
    operations in its order, from the span's source columns only: each source row is the still layer's gray with
    each frame's moving pixels painted over it (`_paint_moving_gray`; `gbuf[160:320]` holds frame b's), pooled.

    The paddle's rows and the blank ones repeat, within an output row and across the rows of a span, so a source
    row is pooled and summed once: `gbuf[320:]` holds the pooled line of source row `held` (-1: none) and
    `hbuf[width + lo..hi]` its horizontal sums, the same float32s as summing again. A row that `_same_line` finds
    equal to it is neither drawn nor summed, and a drawn line equal to it is not summed. `held` comes from a call
    for the same lo..hi just before (its return value; -1 otherwise)."""
    moving_a, moving_b = moving
    xi, xw, yi, yw, ystart, xstart = screen.xi, screen.xw, screen.yi, screen.yw, screen.ystart, screen.xstart
    gbuf, hbuf, gray, still, out = work.gbuf, work.hbuf, canvas.gray, canvas.still, canvas.out
    c0, c1 = xi[xstart[lo], 0], xi[xstart[hi + 1] - 1, 0]
    width = out.shape[1]
    for dx in range(lo, hi + 1):
        hbuf[dx] = np.float32(0.0)
    for j in range(ystart[dy], ystart[dy + 1]):
        sy = yi[j, 0]
        beta = yw[j]
        if held >= 0 and _same_line(held, sy, moving, c0, c1, still):
            for dx in range(lo, hi + 1):
                hbuf[dx] += beta * hbuf[width + dx]
            continue
        for c in range(c0, c1 + 1):
            gbuf[c] = gray[still[sy, c]]
        if rom_render.moving_on_row(moving_b, sy) or (maxpool and rom_render.moving_on_row(moving_a, sy)):
            if maxpool:
                for c in range(c0, c1 + 1):
                    gbuf[SRC_W + c] = gbuf[c]
                _paint_moving_gray(moving_a, sy, c0, c1, gray, gbuf, 0)
                _paint_moving_gray(moving_b, sy, c0, c1, gray, gbuf, SRC_W)
                for c in range(c0, c1 + 1):
                    if gbuf[SRC_W + c] > gbuf[c]:
                        gbuf[c] = gbuf[SRC_W + c]
            else:
                _paint_moving_gray(moving_b, sy, c0, c1, gray, gbuf, 0)
        same = held >= 0
        if same:
            for c in range(c0, c1 + 1):
                if gbuf[c] != gbuf[2 * SRC_W + c]:
                    same = False
                    break
        if not same:
            for c in range(c0, c1 + 1):
                gbuf[2 * SRC_W + c] = gbuf[c]
            for dx in range(lo, hi + 1):
                h = np.float32(0.0)
                for k in range(xstart[dx], xstart[dx + 1]):
                    v = gbuf[xi[k, 0]]
                    if v != 0:  # as `_out_row`: adding 0.0 changes nothing
                        h += np.float32(v) * xw[k]
                hbuf[width + dx] = h
        held = sy
        for dx in range(lo, hi + 1):
            hbuf[dx] += beta * hbuf[width + dx]
    for dx in range(lo, hi + 1):
        out[dy, dx] = np.uint8(min(255.0, np.rint(hbuf[dx])))
    return held


# The output rows around the paddle, drawn once per paddle placement (`_paddle_band`): slots of the direct-mapped
# memo, and of the table of distinct still rows there (one per set of colours met; a full table memoizes nothing)
PADDLE_BITS = 12
PADDLE_SLOTS = 1 << PADDLE_BITS
BAND_SLOTS = 16


@numba.njit(cache=True, inline="always")
def band_span(r0, r1, screen):
    """The output rows (first, last) that read source rows r0..r1, and the source rows (first, last) they read."""
    dy0, dy1 = screen.dyr[r0, 0], screen.dyr[r1, 1]
    return dy0, dy1, screen.yi[screen.ystart[dy0], 0], screen.yi[screen.ystart[dy1 + 1] - 1, 0]


@numba.njit(cache=True)
def band_rows(screen):
    """`band_span` of the paddle's rows at either height (`render.lower_up`): every band `_paddle_band` draws
    lies in these output rows and reads these source rows."""
    return band_span(rom_kernel.PADDLE_ROWS[0] - 1, rom_kernel.PADDLE_ROWS[1], screen)


@numba.njit(cache=True, inline="always")
def _intern_band(still, screen, memo):
    """The slot of `memo.bands` that holds the still layer's rows of `band_rows` (taking a free one for rows not
    met before; -1 when none is left). Those rows hold the walls and the black field: only a colour changes them
    (`update_still` with `ALL_CHANGED`, after which the caller interns them again), so envs of one slot have the
    same still pixels wherever the paddle's output rows read."""
    s0, s1 = band_rows(screen)[2:]
    n = memo.bands_n[0]
    for k in range(n):
        same = True
        for r in range(s0, s1 + 1):
            for c in range(SRC_W):
                if still[r, c] != memo.bands[k, r - s0, c]:
                    same = False
                    break
            if not same:
                break
        if same:
            return k
    if n == memo.bands.shape[0]:
        return -1
    for r in range(s0, s1 + 1):
        copy_row(memo.bands[n, r - s0], still[r])
    memo.bands_n[0] = n + 1
    return n


@numba.njit(cache=True, inline="always")
def _paddle_band(moving, maxpool, band, ch, screen, memo, work, canvas):
    """Recompute the output rows that read the paddle's rows of either frame whole, from the memo when this
    placement was drawn before: they are a function of the env's band of still rows (`_intern_band`), the channel
    and the paddle's rows, column, pattern and colour in each frame (`render.moving_objects`), so long as the ball
    is on none of the source rows they read in either frame. Returns False, drawing nothing, where that does not
    hold (or the band is not interned); else flags the rows in `work.redone`.

    A paddle that moved costs the pixels of its moved edges otherwise (`_redo_span`): some 30 source columns each
    side, the most of an incremental step at random actions; a lookup costs the copy of a few output rows."""
    if band < 0:
        return False
    moving_a, moving_b = moving
    dy0, dy1, s0, s1 = band_span(min(moving_a[4], moving_b[4]), max(moving_a[5], moving_b[5]), screen)
    key = band * 4 + ch  # band < BAND_SLOTS = 16, ch < 3: 6 bits, then 26 per frame
    for objects in moving:
        if objects[0] <= s1 and objects[1] >= s0:  # the ball (rows -1 when there is none)
            return False
        x, pattern, colour, up = objects[6], objects[7], objects[8], rom_kernel.PADDLE_ROWS[0] - objects[4]
        if not (0 <= x < 512 and 0 <= pattern < 256 and 0 <= colour < 256 and 0 <= up < 2):
            return False
        key = (((key * 512 + x) * 256 + pattern) * 256 + colour) * 2 + up
    golden = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: the product's top bits
    slot = np.int64((np.uint64(key) * golden) >> np.uint64(64 - PADDLE_BITS))
    rows, out, width = memo.paddle_rows[slot], canvas.out, canvas.out.shape[1]
    if memo.paddle_keys[slot] == key:
        for dy in range(dy0, dy1 + 1):
            copy_row(out[dy], rows[dy - dy0])
    else:
        held = -1
        for dy in range(dy0, dy1 + 1):
            held = _redo_span(moving, maxpool, dy, 0, width - 1, held, screen, work, canvas)
            copy_row(rows[dy - dy0], out[dy])
        memo.paddle_keys[slot] = key
    for dy in range(dy0, dy1 + 1):
        work.redone[dy] = True
    return True


@numba.njit(cache=True, _nrt=False)
def _redo_rows(frames, maxpool, r0, r1, screen, work, canvas):
    """Recompute the output rows of `frames` (`_out_row`) that read source rows r0..r1, whole, and flag them in
    `work.redone`."""
    held = -1
    for dy in range(screen.dyr[r0, 0], screen.dyr[r1, 1] + 1):
        held = _out_row(frames, maxpool, dy, screen, work, held, canvas)
        work.redone[dy] = True


# what changed in the still layer between two pairs of frames (`still_changes`)
ALL_CHANGED = -1
SCORE_CHANGED = 1 << 6  # bits 0-5: brick row k changed


@numba.njit(cache=True, inline="always")
def still_changes(pa, pb, a, b, static):
    """What differs in the still layer (`render.draw_row` without the moving objects) between the frames (pa, pb)
    and (a, b): `ALL_CHANGED` when a colour or the paddle's pattern did, else bit k for brick row k and
    `SCORE_CHANGED` for the score rows."""
    changed = 0
    for k in range(static.shape[0]):
        s = static[k]
        if a[s] != pa[s] or b[s] != pb[s]:
            if s < 36:  # RAM 0-35: byte s holds part of brick row 5 - s % 6 (`rom.kernel.brick_flags`)
                changed |= 1 << (5 - s % 6)
            elif s == rom_kernel.SHOWN and (a[s] >> 40) == (pa[s] >> 40) and (b[s] >> 40) == (pb[s] >> 40):
                changed |= (
                    SCORE_CHANGED  # the digit pointers drawn (`rom.kernel.drawn_with`); its high bits are colours
                )
            elif 80 <= s < 90 or s == 110:
                changed |= SCORE_CHANGED
            else:
                return ALL_CHANGED
    return changed


@numba.njit(cache=True, inline="always")
def update_still(b, changed, rom, still):
    """Bring `still` ((210, 160) colour bytes) to frame b's still layer, given `still_changes`."""
    if changed == 0:
        return
    for r in range(SRC_H):
        if changed == ALL_CHANGED:
            redraw = True
        elif rom_kernel.BRICK_TOP <= r < rom_kernel.BRICK_TOP + 6 * rom_kernel.BRICK_H:
            redraw = (changed >> ((r - rom_kernel.BRICK_TOP) // rom_kernel.BRICK_H)) & 1 == 1
        else:
            redraw = rom_render.SCORE_ROWS[0] <= r <= rom_render.SCORE_ROWS[1] and changed & SCORE_CHANGED != 0
        if redraw:
            rom_render.draw_row(b, rom, r, still[r], False)


@numba.njit(cache=True, inline="always")
def draw_changed(shown, pair, changed, maxpool, band, ch, screen, memo, work, canvas):
    """Update the canvas (channel `ch`, holding the observation of the pair `shown` = (pa, pb)) to `pair` = (a, b),
    whose still layer is the canvas's (its paddle rows those of `band`: `_intern_band`), recomputing only what can
    differ (`changed`: `still_changes`): everything when a colour changed; a brick row whose bricks changed and the
    score rows when the score or lives did, whole; when the paddle moved, the rows around it whole from the memo
    (`_paddle_band`) or else, each side on its own, the pixels it left or took; and the output pixels under the
    ball in any of the four frames (per output row, the span from the first to the last; `lo` and `hi` of `work`
    hold no span, `redone` no row, before and after) outside the rows redone (a pixel redone twice is the same
    pixel)."""
    pa, pb, a, b = shown[0], shown[1], pair[0], pair[1]
    lo, hi, redone, out = work.lo, work.hi, work.redone, canvas.out
    if changed == ALL_CHANGED:
        draw_full((a, b, b), maxpool, screen, work, canvas)
        return
    for row in range(6):
        if changed & (1 << row):
            r0 = rom_kernel.BRICK_TOP + rom_kernel.BRICK_H * row
            _redo_rows((a, b, b), maxpool, r0, r0 + rom_kernel.BRICK_H - 1, screen, work, canvas)
    if changed & SCORE_CHANGED:
        _redo_rows((a, b, b), maxpool, rom_render.SCORE_ROWS[0], rom_render.SCORE_ROWS[1], screen, work, canvas)
    _mark_ball(pb, screen, work)
    _mark_ball(b, screen, work)
    _mark_ball(pa, screen, work)
    _mark_ball(a, screen, work)
    moving = rom_render.moving_objects(a), rom_render.moving_objects(b)
    up = rom_render.lower_up(b[rom_kernel.SHOWN])
    moved = pa[ram.RAM_PADDLE_X] != a[ram.RAM_PADDLE_X] or pb[ram.RAM_PADDLE_X] != b[ram.RAM_PADDLE_X]
    edges = not (moved and _paddle_band(moving, maxpool, band, ch, screen, memo, work, canvas))
    for side in range(2 if edges else 0):  # each side's moved edges, of both pairs, as one span of their own
        c0a, c1a = _paddle_edge(pa, a, side)
        c0b, c1b = _paddle_edge(pb, b, side)
        if c1a >= 0 or c1b >= 0:
            dy0, dy1, x0, x1 = _span(
                rom_kernel.PADDLE_ROWS[0] - up, rom_kernel.PADDLE_ROWS[1] - up, min(c0a, c0b), max(c1a, c1b), screen
            )
            held = -1  # the source row whose line and sums are held (`_redo_span`)
            for dy in range(dy0, dy1 + 1):
                if not redone[dy]:
                    held = _redo_span(moving, maxpool, dy, x0, x1, held, screen, work, canvas)
    held, held_lo, held_hi = -1, -1, -1
    for dy in range(out.shape[0]):
        if hi[dy] >= 0 and not redone[dy]:  # a redone row is exact already; `still` may be b's alone there
            same = held if lo[dy] == held_lo and hi[dy] == held_hi else -1
            held = _redo_span(moving, maxpool, dy, lo[dy], hi[dy], same, screen, work, canvas)
            held_lo, held_hi = lo[dy], hi[dy]
        lo[dy] = out.shape[1]
        hi[dy] = -1
        redone[dy] = False


@numba.njit(cache=True, inline="always")
def noop_count(mt, i, noop_max):
    """Noops before FIRE at a reset: libstdc++'s `uniform_int_distribution(0, noop_max - 1)` over the env's
    MT19937 (Lemire's multiply-shift with rejection), as ale-py draws it."""
    if noop_max <= 0:
        return 0
    span = np.uint64(noop_max)
    threshold = (np.uint64(2**32) - span) % span
    while True:
        prod = ale_random.mt_next(mt, i) * span
        if (prod & np.uint64(0xFFFFFFFF)) >= threshold:
            break
    return np.int64(prod >> np.uint64(32))


@numba.njit(cache=True, inline="always")
def _emulate(m, c, i, games, cfg, action, step):
    """One emulated frame of ALE action `action` (paddle resistance step `step`) on env i's state row m, counters
    c: ALE's sticky decision first (the previous frame's action and step again with probability `cfg.sticky`,
    from the env's own sticky stream; at 0 nothing repeats, so nothing is drawn), then
    `ale_interface.applied_frame`. Returns the change of ALE's score."""
    prob = cfg.sticky
    if prob <= 0.0 or not ale_random.frame_repeats(games.sticky_mt, games.sticky_buf, i, prob):
        m[rom_kernel.LAST_ACT] = action
        c[STEP] = step
    pot, reward = applied_frame(m, m[rom_kernel.POT], m[rom_kernel.LAST_ACT], c[STEP])
    m[rom_kernel.POT] = pot
    return reward


FIRE_ACTION = 1  # ALE's action number of FIRE


@numba.njit(cache=True, inline="always")
def reset_game(m):
    """ALE's `reset_game` on state row m: the cartridge's state after its reset, the paddle centred, no action."""
    for k in range(rom_kernel.RAM_N):
        m[k] = rom_kernel.RESET_RAM[k]
    m[rom_kernel.POT] = rom_kernel.PADDLE_DEFAULT
    m[rom_kernel.LAST_ACT] = rom_kernel.NOOP
    m[rom_kernel.TERM] = 0
    m[rom_kernel.FLAGS] = 0
    m[rom_kernel.SHOWN] = rom_kernel.drawn_with(m)


# per-env counters in `C` (n, NC) int64: frames of the episode and in all, whether the last step ended the
# episode (reset on the next), the paddle step the applied action carries (sticky with it), the frames its
# reset played (FIRE and noops: they do not count towards truncation)
EP_FRAMES, FRAMES, DONE, STEP, RESET_FRAMES, NC = 0, 1, 2, 3, 4, 5
# life-loss modes (ale-py's `episodic_life`, `life_loss_info`)
LIVES_IGNORED, LIFE_LOSS_INFO, EPISODIC_LIFE = 0, 1, 2


# Reset observations drawn, keyed by the state they show (`_reset_one`): a direct-mapped cache of this many slots
MEMO_SLOTS = 64


def new_memo(screen: Screen, num_channels: int) -> Memo:
    """An empty `Memo` for observations of `screen`'s size with `num_channels` channels."""
    height, width = screen.ystart.shape[0] - 1, screen.xstart.shape[0] - 1
    dy0, dy1, s0, s1 = band_rows(screen)
    return Memo(
        np.full((MEMO_SLOTS, rom_kernel.NI), -1, dtype=np.int64),
        np.zeros((MEMO_SLOTS, height, width, num_channels), dtype=np.uint8),
        np.zeros((BAND_SLOTS, s1 - s0 + 1, SRC_W), dtype=np.uint8),
        np.zeros(1, dtype=np.int64),
        np.full(PADDLE_SLOTS, -1, dtype=np.int64),
        np.zeros((PADDLE_SLOTS, dy1 - dy0 + 1, width), dtype=np.uint8),
    )


@numba.njit(cache=True, inline="always")
def copy_row(dst, src):
    """`dst[:] = src`, element by element: an array assignment may copy its source first (numpy's rule for
    overlapping arrays), an allocation that a kernel compiled without reference counting cannot make."""
    for k in range(src.shape[0]):
        dst[k] = src[k]


@numba.njit(cache=True, _nrt=False)
def _reset_one(i, games, cfg, screen, memo, work, obs):
    """ale-py's reset of env i (reset_game, FIRE, noops: sticky frames like any other) and its first observation
    into `obs`: a zero stack but the last frame (not pooled).

    That frame is a function of the state row alone, and resets reach few states (`reset_game` is the same for
    every seed; only the noops and sticky frames after it vary), while drawing one whole costs as much as some
    hundred incremental steps: so it is drawn once per state and kept in `memo` (the slot from a hash of the row;
    a slot holding another state is redrawn)."""
    m = games.state[i]
    c = games.counters[i]
    reset_game(m)
    c[STEP] = rom_kernel.PADDLE_DELTA
    n = noop_count(games.noop_mt, i, cfg.noop_max)
    if cfg.fire_reset:  # ale-py presses FIRE first, and that frame counts as one of the noops
        _emulate(m, c, i, games, cfg, FIRE_ACTION, rom_kernel.PADDLE_DELTA)
        c[EP_FRAMES] += 1
        n = max(n - 1, 0)
    for _ in range(n):
        _emulate(m, c, i, games, cfg, rom_kernel.NOOP, rom_kernel.PADDLE_DELTA)
        c[EP_FRAMES] += 1
    c[FRAMES] += c[EP_FRAMES]
    c[RESET_FRAMES] = c[EP_FRAMES]
    copy_row(games.pairs[i, 0], m)  # the first observation is the last frame alone
    copy_row(games.pairs[i, 1], m)
    obs[i, :-1] = 0
    games.heads[i] = obs.shape[1] - 1
    update_still(m, ALL_CHANGED, screen.rom, games.still[i])
    games.band[i] = _intern_band(games.still[i], screen, memo)
    h = 0
    for k in range(m.shape[0]):
        h = h * 1000003 + m[k]
    slot = (h ^ (h >> 29)) & (memo.keys.shape[0] - 1)
    hit = True
    for k in range(m.shape[0]):
        if memo.keys[slot, k] != m[k]:
            hit = False
            break
    if not hit:
        for ch in range(screen.colours.shape[0]):
            canvas = Canvas(screen.colours[ch], games.still[i], memo.frames[slot, :, :, ch])
            draw_full((m, m, m), cfg.maxpool, screen, work, canvas)
        copy_row(memo.keys[slot], m)
    frame_bytes = memo.frames[slot].size
    move_bytes(obs, ((i + 1) * obs.shape[1] - 1) * frame_bytes, memo.frames, slot * frame_bytes, frame_bytes)
    move_bytes(games.frame, i * frame_bytes, memo.frames, slot * frame_bytes, frame_bytes)


@numba.njit(cache=True, inline="always")
def _reset_env(i, games, cfg, screen, memo, work, obs):
    """ale-py's reset of env i (`PreprocessedEnv::reset`): its pending seed, if any (>= 0), reseeds its noop
    stream and its sticky stream (ALE's `random_seed`) and restarts its frame count, as ale-py's reload of the
    game does, and is used up (-1); then `_reset_one`."""
    seeds, counters = games.seeds, games.counters
    if seeds[i] >= 0:
        ale_random.mt_seed(games.noop_mt, work.unused, i, seeds[i])
        ale_random.mt_seed(games.sticky_mt, games.sticky_buf, i, seeds[i])
        counters[i, FRAMES] = 0
        seeds[i] = -1
    counters[i, EP_FRAMES] = 0
    counters[i, DONE] = 0
    _reset_one(i, games, cfg, screen, memo, work, obs)


@numba.njit(cache=True, inline="always")
def _named(games, cfg, screen, memo, results, work):
    """The kernels' arguments (`plain`) as their named tuples."""
    return Games(*games), Config(*cfg), Screen(*screen), Memo(*memo), Results(*results), Work(*work)


@numba.njit(cache=True, nogil=True, _nrt=False)
def reset_kernel(rows, games, cfg, screen, memo, results, work):
    """Reset envs `rows` (`_reset_env`: `games.seeds` holds each env's pending seed) and report every env's
    info. The bundles come as `plain` tuples."""
    games, cfg, screen, memo, results, work = _named(games, cfg, screen, memo, results, work)
    for k in range(rows.shape[0]):
        _reset_env(rows[k], games, cfg, screen, memo, work, results.obs)
    for i in range(games.state.shape[0]):
        results.lives[i] = games.state[i, ram.RAM_LIVES]
        results.frame_number[i] = games.counters[i, FRAMES]
        results.episode_frame_number[i] = games.counters[i, EP_FRAMES]


# Observations of more bytes than this are written ahead and past the cache (`step_kernel`, `stream_bytes`):
# they and the rings outgrow the core's own cache, so the caller reads them from memory anyway, a cached write
# first reads each line it writes (at N = 256 and 1,024, 84 x 84 x 4: some 15-20% of a step) and a stack built
# from the rings reads its frames back from memory. Smaller ones are built from the rings, which stay in the
# cache, and stay in the cache for the caller (written ahead, they spread over more arrays than it holds).
STREAM_BYTES = 4 << 20


@numba.njit(cache=True, inline="always")
def _after(head, stack):
    """The ring slot after `head`: the oldest frame's, which the next frame takes."""
    return head + 1 if head + 1 < stack else 0


# Source rows above and below the ball whose lines under it `_prefetch_ahead` asks for
PREFETCH_ROWS = 10


@numba.njit(cache=True, inline="always")
def _prefetch_ahead(rows, r, games, screen):
    """Before stepping env `rows[r]`, ask for what the next envs' steps miss first (`prefetch`): the state row and
    counters of `rows[r + 2]`; for `rows[r + 1]`, whose state the call before asked for, the lines under its ball
    and `PREFETCH_ROWS` source rows each side of it, of its still layer (which `_redo_span` reads) and of its
    frame (which it draws on). Once the envs outgrow the cache (the step kernel calls this only for stacks
    written ahead), each step otherwise waited on these misses one by one, as a profile of the step at N = 1,024
    showed: there this makes the step some 6% faster, side by side (BENCHMARKS.md). Asking for the pairs as
    well (34 more lines) gained nothing measurable."""
    if r + 2 < rows.shape[0]:
        j = rows[r + 2]
        row_bytes = games.state.shape[1] * games.state.itemsize
        for b in range(0, row_bytes, 64):
            prefetch(games.state, j * row_bytes + b)
        prefetch(games.counters, j * games.counters.shape[1] * games.counters.itemsize)
    if r + 1 < rows.shape[0]:
        j = rows[r + 1]
        m = games.state[j]
        first, last = rom_kernel.BALL_ROWS[m[ram.RAM_BALL_Y], 0], rom_kernel.BALL_ROWS[m[ram.RAM_BALL_Y], 1]
        if first >= 0:
            c = min(rom_render.ball_column(m), SRC_W - 1)
            first, last = max(first - PREFETCH_ROWS, 0), min(last + PREFETCH_ROWS, SRC_H - 1)
            for row in range(first, last + 1):
                prefetch(games.still, (j * SRC_H + row) * SRC_W + c)
            dy0, dy1, dx, _ = _span(first, last, c, c, screen)
            frame = games.frame
            for dy in range(dy0, dy1 + 1):
                prefetch(frame, (((j * frame.shape[1] + dy) * frame.shape[2]) + dx) * frame.shape[3])


@numba.njit(cache=True, inline="always")
def _ordered(ring, heads, i, out, k):
    """Env i's stack from its ring (`Games.heads`), oldest frame first, into `out[k]`: two `memmove`s (stacks that
    outgrow the cache are written ahead instead: `step_kernel`)."""
    stack = ring.shape[1]
    frame_bytes = ring[0, 0].size
    first = _after(heads[i], stack)  # the oldest frame's slot
    at, ring_at = k * stack * frame_bytes, i * stack * frame_bytes
    older, newer = (stack - first) * frame_bytes, first * frame_bytes
    move_bytes(out, at, ring, ring_at + first * frame_bytes, older)
    move_bytes(out, at + older, ring, ring_at, newer)


@numba.njit(cache=True, inline="always")
def _put(dst, dst_at, src, src_at, count, stream):
    """`stream_bytes` if `stream`, else `move_bytes`."""
    if stream:
        stream_bytes(dst, dst_at, src, src_at, count)
    else:
        move_bytes(dst, dst_at, src, src_at, count)


@numba.njit(cache=True, inline="always")
def _write_ahead(ring, heads, i, ahead, r, first, stream):
    """Env i's frames from its ring into row r of the stacks `ahead` (`step_kernel`): for k = first..stack - 1,
    `ahead[k - first]` gets the stack's frames k.. (oldest first) in its slots 0.., what the stacks of the next
    steps share with this one."""
    stack = ring.shape[1]
    frame_bytes = ring[0, 0].size
    oldest = _after(heads[i], stack)
    for k in range(first, stack):
        for j in range(stack - k):
            slot = oldest + k + j
            if slot >= stack:
                slot -= stack
            at = (r * stack + j) * frame_bytes
            _put(ahead[k - first], at, ring, (i * stack + slot) * frame_bytes, frame_bytes, stream)


@numba.njit(cache=True, nogil=True, _nrt=False)
def stacks(rows, ring, heads, out):
    """The stacks of envs `rows`, oldest frame first, from their rings into `out[k]` for `rows[k]`: ale-py's
    observations, in an array of the caller's."""
    for k in range(rows.shape[0]):
        _ordered(ring, heads, rows[k], out, k)


@numba.njit(cache=True, nogil=True, _nrt=False)
def prime(rows, ring, heads, ahead):
    """Fill the stacks of the next `stack - 1` steps (`ahead`, row k for env `rows[k]`) with the frames they share
    with the envs' current stacks, for `step_kernel` to complete."""
    for k in range(rows.shape[0]):
        _write_ahead(ring, heads, rows[k], ahead, k, 1, False)


def step_scratch(num_envs: int, height: int, width: int) -> Work:
    """The kernels' working arrays, made once by the caller: the kernels are compiled without numba's reference
    counting (`_nrt=False`: the views the step kernel takes env by env and pixel span by span were counted with
    atomic operations, a quarter of its time; and counting each array of a bundle wherever the bundle is passed
    made the reset kernel's cold compile some 40% slower), so they allocate nothing."""
    return Work(
        np.zeros(SRC_W, dtype=np.int64),
        np.zeros(3 * SRC_W, dtype=np.uint8),
        np.zeros(2 * width, dtype=np.float32),
        np.zeros((2, rom_kernel.NI), dtype=np.int64),
        np.zeros(rom_kernel.NI, dtype=np.int64),
        np.full(height, width, dtype=np.int64),
        np.full(height, -1, dtype=np.int64),
        np.zeros(height, dtype=np.bool_),
        np.zeros(num_envs, dtype=np.uint64),
    )


@numba.njit(cache=True, nogil=True, _nrt=False)
def step_kernel(rows, out, ahead, games, cfg, screen, memo, results, work):
    """One agent step of envs `rows` (distinct; the others are left alone): `cfg.frameskip` frames of each env's
    ALE action `games.actions[i]` with paddle step `games.paddle_steps[i]`, the reward summed (clipped to its sign
    when `cfg.clip`), the new max-pooled, resized frame drawn over the last in `games.frame` ((n, H, W,
    channels): one channel per row of `screen.colours`, the colour byte's gray or R, G, B) and copied into
    `results.obs` ((n, stack, H, W, channels), C-contiguous), each env's frames a ring: the newest over the
    oldest, its slot becoming the env's head (`Games.heads`).

    The stacks, row r for env `rows[r]`, go to one of two places (or neither, when both have no rows: `stacks`
    then reads the rings). Into `out`, in order from the ring, while the frames are in the cache (arrays of up to
    `STREAM_BYTES`, whose rings stay in the cache). Or, for larger ones, ahead: `ahead` holds `stack` arrays,
    this step's and the next steps', which `prime` or the steps before filled with the frames they share with
    this step's (the `stack - 1 - k` oldest of `ahead[k]`); the new frame goes into slot `stack - 1 - k` of each
    `ahead[k]` past the cache (an env reset in this step writes all its reset stack's frames there), and the
    caller gets `ahead[0]` whole, with no frame read back from memory to build it.

    Autoreset as ale-py's: NextStep (`cfg.same_step` False), an env whose episode ended on its last step is reset
    now (`_reset_env`, with its pending seed) and its action ignored; SameStep, an env whose episode ends in this
    step has its last stack copied to `results.final_obs` and is reset at once (the reward, terminated and
    truncated are the step's, the observation and the lives and frame numbers the reset's).

    As ale-py, the max-pool reads two slots, filled by the step's last two planned frames, and pools into the
    second: the frame that ends an episode (game over, truncation) fills neither, so a step that ends one early
    repeats the last frame, and one that ends on its last frame pools the frame before it with the last step's
    two; at frameskip 1 the first slot keeps the reset's frame. Under `EPISODIC_LIFE` a lost life ends the
    episode as a game over does; under `LIFE_LOSS_INFO` a step (all its frames played) in which a life was lost
    is terminated and the game goes on. The bundles come as `plain` tuples."""
    games, cfg, screen, memo, results, work = _named(games, cfg, screen, memo, results, work)
    obs, pairs, counters = results.obs, games.pairs, games.counters
    reward, terminated, truncated = results.reward, results.terminated, results.truncated
    last_pair, m_slot = work.last_pair, work.m_slot
    frameskip = cfg.frameskip
    width = obs.shape[3]
    stack = obs.shape[1]
    frame_bytes = obs.shape[2] * width * obs.shape[4]
    stack_bytes = stack * frame_bytes
    ring_stream = ahead[0].shape[0] > 0  # the ring is read again only by `stacks`, `prime` and SameStep
    work.lo[:] = width
    work.hi[:] = -1
    work.redone[:] = False
    work.unused[:] = 0
    for r in range(rows.shape[0]):
        i = rows[r]
        if ring_stream:  # the envs outgrow the cache
            _prefetch_ahead(rows, r, games, screen)
        reward[i] = 0
        terminated[i] = False
        truncated[i] = False
        reset = counters[i, DONE] != 0
        if reset:
            _reset_env(i, games, cfg, screen, memo, work, obs)
        else:
            m = games.state[i]
            c = counters[i]
            lives_before = m[ram.RAM_LIVES]
            for k in range(m.shape[0]):
                last_pair[0, k] = pairs[i, 0, k]
                last_pair[1, k] = pairs[i, 1, k]
            total = 0
            for f in range(frameskip):
                total += _emulate(m, c, i, games, cfg, games.actions[i], games.paddle_steps[i])
                counters[i, EP_FRAMES] += 1
                counters[i, FRAMES] += 1
                if m[ram.RAM_LIVES] == 0:
                    terminated[i] = True
                    break
                if cfg.life_mode == EPISODIC_LIFE and m[ram.RAM_LIVES] < lives_before:
                    terminated[i] = True
                    break
                if cfg.max_frames > 0 and counters[i, EP_FRAMES] - counters[i, RESET_FRAMES] >= cfg.max_frames:
                    truncated[i] = True
                    break
                slot = f - frameskip + 2  # ale-py's max-pool slots: the step's last two planned frames
                if slot >= 0:  # element by element: a slice would be a view, reference-counted
                    for k in range(m.shape[0]):
                        pairs[i, slot, k] = m[k]
            ended = terminated[i] or truncated[i]
            ended_last = ended and f == frameskip - 1
            if ended:  # ale-py keeps the pooled slot and pools into it: see docstring
                for k in range(m.shape[0]):  # element by element: the kernel allocates nothing (`step_scratch`)
                    m_slot[k] = pairs[i, 0, k]  # after a full step, its next-to-last frame
                    pairs[i, 0, k] = last_pair[0, k]
                    pairs[i, 1, k] = last_pair[1, k]
            if cfg.clip:
                total = (total > 0) - (total < 0)
            reward[i] = total
            colours, still, frame = screen.colours, games.still[i], games.frame[i]
            if ended_last and cfg.maxpool:  # the next step resets (and redraws the still layer)
                for ch in range(colours.shape[0]):
                    canvas = Canvas(colours[ch], still, frame[:, :, ch])
                    draw_full((last_pair[0], last_pair[1], m_slot), 2, screen, work, canvas)
            else:
                changed = still_changes(last_pair[0], last_pair[1], pairs[i, 0], pairs[i, 1], screen.static)
                update_still(pairs[i, 1], changed, screen.rom, still)
                if changed == ALL_CHANGED:
                    games.band[i] = _intern_band(still, screen, memo)
                for ch in range(colours.shape[0]):
                    canvas = Canvas(colours[ch], still, frame[:, :, ch])
                    draw_changed(
                        last_pair, pairs[i], changed, cfg.maxpool, games.band[i], ch, screen, memo, work, canvas
                    )
            new = _after(games.heads[i], stack)  # over the oldest
            _put(obs, i * stack_bytes + new * frame_bytes, games.frame, i * frame_bytes, frame_bytes, ring_stream)
            games.heads[i] = new
            counters[i, DONE] = ended
            if cfg.life_mode == LIFE_LOSS_INFO and m[ram.RAM_LIVES] < lives_before:  # the game goes on
                terminated[i] = True
            if ended and cfg.same_step:
                _ordered(obs, games.heads, i, results.final_obs, i)
                _reset_env(i, games, cfg, screen, memo, work, obs)
                reset = True
        results.lives[i] = games.state[i, ram.RAM_LIVES]
        results.frame_number[i] = counters[i, FRAMES]
        results.episode_frame_number[i] = counters[i, EP_FRAMES]
        if out.shape[0]:
            _ordered(obs, games.heads, i, out, r)
        elif ahead[0].shape[0] == 0:
            continue
        elif reset:  # the reset stack's frames (`_reset_one`), where the frames before it were
            _write_ahead(obs, games.heads, i, ahead, r, 0, True)
        else:  # the new frame, from the cache, into each stack that holds it
            for k in range(stack):
                stream_bytes(
                    ahead[k], (r * stack + stack - 1 - k) * frame_bytes, games.frame, i * frame_bytes, frame_bytes
                )
    store_fence()
