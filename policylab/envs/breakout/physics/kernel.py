"""The numba hot loop of the physics model: one call advances every env by one agent step.

State layout, random streams and frame order: docs/breakout.md, "Module notes"."""

from __future__ import annotations

import numba
import numpy as np

from policylab.envs.breakout import ale_random

_DISARMED = 1 << 30  # COOLDOWN while bricks wait for a paddle or ceiling bounce (brick_rearm_on_bounce)

# float state slots (PQ: accel model hidden position / control model control value u; PT: control target)
BX, BY, BVX, BVY, PQ, PV, PX, PREV_RX, PREV_RY, PW, PT = range(11)
NF = 11
# int state slots
IN_PLAY, LIVES, SCORE, LEVEL, HITS, COOLDOWN, SERVE_WAIT, LAST_ACT, TERM, SHRUNK, STEPS, PREV_IN_PLAY, LEFT, WALLS = (
    range(14)
)
NI = 14

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_ONE = np.uint64(1)
_INV53 = 1.0 / 9007199254740992.0

_FIRE, _RIGHT, _LEFT = 1, 2, 3


@numba.njit(cache=True, inline="always")
def _mix(z):
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@numba.njit(cache=True, inline="always")
def _uniform(rng, i):
    """Next uniform [0, 1) of env i's splitmix64 stream."""
    s = rng[i] + _GOLDEN
    rng[i] = s
    return np.float64(_mix(s) >> _S11) * _INV53


@numba.njit(cache=True)
def seed_states(seeds):
    """Initial RNG state per env: a hash of its seed (so seeds s and s+1 give unrelated streams)."""
    out = np.empty(seeds.shape[0], dtype=np.uint64)
    for i in range(seeds.shape[0]):
        out[i] = _mix(np.uint64(seeds[i]) * _GOLDEN + np.uint64(0x5EED))
    return out


@numba.njit(cache=True)
def _fill_bricks(bricks, i, n):
    for k in range(n):
        bricks[i, k] = 1


@numba.njit(cache=True)
def _observe(p, F, I, obs, i):
    inp = I[i, IN_PLAY]
    if inp:
        rx = F[i, BX]
        ry = F[i, BY]
        if p.report_integer:
            rx = np.floor(rx)
            ry = np.floor(ry)
    else:
        rx = 0.0
        ry = 0.0
    if inp and I[i, PREV_IN_PLAY]:
        vx = rx - F[i, PREV_RX]
        vy = ry - F[i, PREV_RY]
    else:
        vx = 0.0
        vy = 0.0
    obs[i, 0] = rx
    obs[i, 1] = ry
    obs[i, 2] = vx
    obs[i, 3] = vy
    obs[i, 4] = 1.0 if inp else 0.0
    obs[i, 5] = F[i, PX]
    obs[i, 6] = F[i, PW]
    obs[i, 7] = I[i, LIVES]
    obs[i, 8] = I[i, SCORE]
    F[i, PREV_RX] = rx
    F[i, PREV_RY] = ry
    I[i, PREV_IN_PLAY] = inp


@numba.njit(cache=True, nogil=True)  # a learner's shards step their envs on parallel threads
def reset_kernel(p, F, I, bricks, rng, mt, seeds, obs):
    n_bricks = p.brick_rows * p.brick_cols
    init = seed_states(seeds)
    for i in range(F.shape[0]):
        if p.rng_ale:  # a fresh ALE emulator seeded with the env's seed; its reset draws nothing
            ale_random.mt_seed(mt, rng, i, seeds[i])
        else:
            rng[i] = init[i]
        for k in range(NF):
            F[i, k] = 0.0
        for k in range(NI):
            I[i, k] = 0
        for k in range(bricks.shape[1]):
            bricks[i, k] = 0
        _fill_bricks(bricks, i, n_bricks)
        F[i, PQ] = p.paddle_start_x
        F[i, PX] = p.paddle_start_x
        if p.n_paddle_control_table > 0:
            F[i, PQ] = p.paddle_control_start
            F[i, PT] = _control_target(p, F[i, PQ])
        F[i, PW] = p.paddle_width
        I[i, LIVES] = p.lives
        I[i, SERVE_WAIT] = p.serve_delay
        I[i, LEFT] = n_bricks
        _observe(p, F, I, obs, i)


@numba.njit(cache=True, inline="always")
def _control_target(p, u):
    """The game's paddle target x for controller value u: the measured table, indexed by floor(u * res)."""
    n = p.n_paddle_control_table
    k = min(max(int(np.floor(u * p.paddle_control_res + 1e-6)), 0), n - 1)
    return p.paddle_control_table[k]


@numba.njit(cache=True, inline="always")
def _paddle_control_frame(p, F, i, act):
    """ALE's paddle controller: the displayed x chases last frame's target (one-frame lag), then the
    controller value moves one step for LEFT/RIGHT (clamped to its travel) and the game reads a new target."""
    x = F[i, PX]
    x = x + np.floor(p.paddle_chase * (F[i, PT] - x))
    F[i, PX] = min(max(x, p.paddle_min_x), p.paddle_max_x)
    u = F[i, PQ]
    if act == _RIGHT:
        u -= 1.0
    elif act == _LEFT:
        u += 1.0
    u = min(max(u, 0.0), p.paddle_control_max)
    F[i, PQ] = u
    F[i, PT] = _control_target(p, u)


@numba.njit(cache=True, inline="always")
def _paddle_frame(p, F, i, act):
    d = 1.0 if act == _RIGHT else (-1.0 if act == _LEFT else 0.0)
    v = F[i, PV]
    vmax = p.paddle_max_speed
    if d != 0.0:
        if v * d < 0.0:
            v = 0.0
        v = min(max(v + d * p.paddle_accel, -vmax), vmax)
    else:
        dec = p.paddle_decel
        if v > 0.0:
            v = max(v - dec, 0.0)
        elif v < 0.0:
            v = min(v + dec, 0.0)
    lo = p.paddle_min_x
    hi = p.paddle_max_x
    q = F[i, PQ] + v
    qlo = lo - p.paddle_overshoot_left
    qhi = hi + p.paddle_overshoot_right
    if q < qlo:
        q = qlo
        v = 0.0
    elif q > qhi:
        q = qhi
        v = 0.0
    F[i, PQ] = q
    F[i, PV] = v
    x = min(max(q, lo), hi)
    if p.paddle_integer:
        x = np.floor(x + 0.5)
    F[i, PX] = x


@numba.njit(cache=True, inline="always")
def _serve(p, F, I, rng, i, frame):
    """Put a ball in play from serve pair k: drawn from the RNG, or `frame` (frames since reset) mod n."""
    n = p.n_serve_choices
    if p.serve_pick_frame:
        k = frame % n
    else:
        k = min(int(_uniform(rng, i) * n), n - 1)
    F[i, BX] = p.serve_choices[k, 0]
    F[i, BY] = p.serve_y
    F[i, BVX] = p.serve_choices[k, 1]
    F[i, BVY] = p.serve_vy
    I[i, IN_PLAY] = 1
    I[i, LEVEL] = 0
    I[i, HITS] = 0
    if p.brick_rearm_on_bounce:
        I[i, COOLDOWN] = 0


@numba.njit(cache=True, inline="always")
def _take_brick(p, I, bricks, i, r, c, rows, cols):
    """Remove brick (r, c) of env i, refill the wall once when it is cleared; return its points."""
    bricks[i, r * cols + c] = 0
    I[i, LEFT] -= 1
    if I[i, LEFT] == 0 and I[i, WALLS] == 0:
        I[i, WALLS] = 1
        _fill_bricks(bricks, i, rows * cols)
        I[i, LEFT] = rows * cols
    return p.row_points[r]


@numba.njit(cache=True, inline="always")
def _hit_brick(p, F, I, bricks, i, y_old):
    """Remove the first live brick the ball overlaps (nearest row along its travel); return points.

    The ball goes back to its height before this frame and reverses, so it leaves the brick row
    instead of eating along it.
    """
    if I[i, COOLDOWN] > 0:
        I[i, COOLDOWN] -= 1
        return 0
    rows = p.brick_rows
    cols = p.brick_cols
    bh = p.brick_h
    bw = p.brick_w
    top = p.brick_top
    left = p.brick_left
    x = F[i, BX]
    y = F[i, BY]
    r0 = int(np.floor((y - top) / bh))
    r1 = int(np.floor((y + p.ball_h - 1e-6 - top) / bh))
    if r1 < 0 or r0 >= rows:
        return 0
    c0 = int(np.floor((x - left) / bw))
    c1 = int(np.floor((x + p.ball_w - 1e-6 - left) / bw))
    r0 = max(r0, 0)
    r1 = min(r1, rows - 1)
    c0 = max(c0, 0)
    c1 = min(c1, cols - 1)
    up = F[i, BVY] < 0.0
    for k in range(r1 - r0 + 1):
        r = r1 - k if up else r0 + k
        for c in range(c0, c1 + 1):
            if bricks[i, r * cols + c]:
                F[i, BY] = y_old
                F[i, BVY] = -F[i, BVY]
                I[i, COOLDOWN] = p.brick_cooldown
                if r < p.fast_rows:
                    I[i, LEVEL] = p.n_level_scale - 1
                    F[i, BVY] = np.sign(F[i, BVY]) * p.paddle_bounce_y * p.level_scale[I[i, LEVEL]]
                return _take_brick(p, I, bricks, i, r, c, rows, cols)
    return 0


@numba.njit(cache=True, inline="always")
def _paddle_bounce(p, F, I, i):
    bh = p.ball_h
    py = p.paddle_y
    y = F[i, BY]
    vy = F[i, BVY]
    overlap = p.paddle_overlap_rule
    if vy <= 0.0:
        return
    if overlap:  # ALE: any frame on which the falling ball overlaps the paddle rows
        if y + bh <= py or y >= py + p.paddle_h:
            return
    elif y + bh < py or y + bh - vy >= py + p.paddle_h:
        return
    x = F[i, BX]
    bw = p.ball_w
    inset = p.paddle_hit_inset
    lo = F[i, PX] + inset
    hi = F[i, PX] + F[i, PW] - inset
    if x + bw <= lo or x >= hi:
        return
    if not overlap:
        F[i, BY] = py - bh
    hits = I[i, HITS] + 1
    I[i, HITS] = hits
    for k in range(min(p.n_level_scale - 1, p.n_level_hits)):
        if hits == p.level_hits[k] and I[i, LEVEL] < k + 1:
            I[i, LEVEL] = k + 1
    F[i, BVY] = -p.paddle_bounce_y * p.level_scale[I[i, LEVEL]]
    nz = p.n_zone_vx
    u = (x + 0.5 * bw - lo) / max(hi - lo, 1e-9)
    z = min(max(int(np.floor(u * nz)), 0), nz - 1)
    F[i, BVX] = p.zone_vx[z]


@numba.njit(cache=True, inline="always")
def _ale_speed(p, I, i, steep):
    """(|vx|, |vy|) for the ball's paddle-hit count (or the top speed after a fast-row brick)."""
    if I[i, LEVEL] > 0:
        return p.top_speed[0], p.top_speed[1]
    k = min(max(I[i, HITS], 1), p.n_hit_speed_table) - 1
    o = 2 if steep else 0
    return p.hit_speed_table[k, o], p.hit_speed_table[k, o + 1]


@numba.njit(cache=True, inline="always")
def _ale_paddle_contact(p, F, I, i):
    """A falling ball drawn over the paddle rows and columns turns up; the section of the paddle it met
    (offset floor(x) - paddle x, scaled to 16 px) picks direction and shallow/steep angle."""
    y = F[i, BY]
    py = p.paddle_y
    if F[i, BVY] <= 0.0 or y + p.ball_h <= py or y >= py + p.paddle_h:
        return
    x = np.floor(F[i, BX])
    px = F[i, PX]
    pw = F[i, PW]
    if x + p.ball_w <= px or x >= px + pw:
        return
    off = int(np.floor((x - px) * 16.0 / pw))
    sec = p.bounce_sections[min(max(off - p.bounce_offset_min, 0), p.n_bounce_sections - 1)]
    if off == p.bounce_nudge_offset:
        F[i, BX] -= p.bounce_nudge_px if F[i, BVX] > 0.0 else -p.bounce_nudge_px
    I[i, HITS] += 1
    if p.brick_rearm_on_bounce:
        I[i, COOLDOWN] = 0
    vx, vy = _ale_speed(p, I, i, abs(sec) < 1.5)
    F[i, BVX] = vx if sec > 0 else -vx
    F[i, BVY] = -vy


@numba.njit(cache=True, inline="always")
def _ale_brick_contact(p, F, I, bricks, i):
    """The first live brick under the drawn ball (nearest row along its travel) goes; vy reverses.
    A brick of the top `fast_rows` rows sets the top speed for the rest of this ball. Returns points."""
    if I[i, COOLDOWN] > 0:
        I[i, COOLDOWN] -= 1
        return 0
    rows = p.brick_rows
    cols = p.brick_cols
    x = np.floor(F[i, BX]) + p.brick_contact_dx
    y = np.floor(F[i, BY]) - p.brick_contact_dy
    h = int(p.brick_contact_h) if p.brick_contact_h > 0 else int(p.ball_h)
    bh = p.brick_h
    solid = p.brick_solid_h if p.brick_solid_h > 0 else bh
    if y + h <= p.brick_top or y >= p.brick_top + rows * bh:
        return 0
    c0 = max(int(np.floor((x - p.brick_left) / p.brick_w)), 0)
    c1 = min(int(np.floor((x + p.brick_contact_w - 1.0 - p.brick_left) / p.brick_w)), cols - 1)
    up = F[i, BVY] < 0.0
    for k in range(h):  # judged lines, the lowest first going up (the row it came from), the highest going down
        d = y + (h - 1 - k if up else k) - p.brick_top
        r = int(np.floor(d / bh))
        if r < 0 or r >= rows or d - r * bh >= solid:
            continue
        for c in range(c0, c1 + 1):
            if bricks[i, r * cols + c]:
                F[i, BVY] = -F[i, BVY]
                if r < p.fast_rows and I[i, LEVEL] == 0:
                    I[i, LEVEL] = 1
                    F[i, BVX] = p.top_speed[0] if F[i, BVX] > 0.0 else -p.top_speed[0]
                    F[i, BVY] = p.top_speed[1] if F[i, BVY] > 0.0 else -p.top_speed[1]
                I[i, COOLDOWN] = _DISARMED if p.brick_rearm_on_bounce else p.brick_cooldown
                return _take_brick(p, I, bricks, i, r, c, rows, cols)
    return 0


@numba.njit(cache=True, inline="always")
def _ale_walls(p, F, I, i):
    """Walls flip the velocity once the drawn ball is past them (no mirroring of the position)."""
    x = np.floor(F[i, BX])
    if x < p.field_left:
        F[i, BVX] = abs(F[i, BVX])
    elif x > p.field_right - p.ball_w:
        F[i, BVX] = -abs(F[i, BVX])
    if np.floor(F[i, BY]) < p.field_top and F[i, BVY] < 0.0:
        F[i, BVY] = -F[i, BVY]
        if p.brick_rearm_on_bounce:
            I[i, COOLDOWN] = 0
        if p.shrink_on_top and not I[i, SHRUNK]:
            I[i, SHRUNK] = 1
            F[i, PW] = p.paddle_width_small


@numba.njit(cache=True, inline="always")
def _lose_ball(p, I, i):
    I[i, IN_PLAY] = 0
    I[i, LIVES] -= 1
    I[i, SERVE_WAIT] = p.serve_delay
    if I[i, LIVES] <= 0:
        I[i, TERM] = 1


@numba.njit(cache=True, inline="always")
def _legacy_ball_frame(p, F, I, bricks, i):
    """Move, mirror at the walls, hit a brick, bounce on the paddle (the `legacy` ball rule); returns points."""
    y_old = F[i, BY]
    x = F[i, BX] + F[i, BVX]
    y = y_old + F[i, BVY]
    lo = p.field_left
    hi = p.field_right - p.ball_w
    if x < lo:
        x = 2.0 * lo - x
        F[i, BVX] = -F[i, BVX]
    elif x > hi:
        x = 2.0 * hi - x
        F[i, BVX] = -F[i, BVX]
    top = p.field_top
    if y < top:
        y = 2.0 * top - y
        F[i, BVY] = -F[i, BVY]
        if p.shrink_on_top and not I[i, SHRUNK]:
            I[i, SHRUNK] = 1
            F[i, PW] = p.paddle_width_small
    F[i, BX] = x
    F[i, BY] = y
    r = _hit_brick(p, F, I, bricks, i, y_old)
    _paddle_bounce(p, F, I, i)
    return r


@numba.njit(cache=True, nogil=True)  # a learner's shards step their envs on parallel threads
def step_kernel(p, F, I, bricks, rng, mt, actions, obs, reward, terminated, max_steps):
    frameskip = p.frameskip
    sticky = p.sticky_prob
    ale_rng = p.rng_ale
    auto = p.serve_rule_auto
    control = p.n_paddle_control_table > 0
    ale = p.ball_rule_ale
    for i in range(F.shape[0]):
        reward[i] = 0.0
        if I[i, TERM] or (max_steps > 0 and I[i, STEPS] >= max_steps):
            terminated[i] = I[i, TERM] == 1
            continue
        a = actions[i]
        r = 0
        if ale_rng:  # ALE draws every frame's decision, sticky or not, game over or not
            repeats = ale_random.step_repeats(mt, rng, i, sticky, frameskip)
        for _f in range(frameskip):
            act = a
            if ale_rng:
                if (repeats >> np.uint64(_f)) & _ONE:
                    act = I[i, LAST_ACT]
            elif sticky > 0.0 and _uniform(rng, i) < sticky:
                act = I[i, LAST_ACT]
            I[i, LAST_ACT] = act
            if ale and I[i, IN_PLAY] and np.floor(F[i, BY]) >= p.lost_y:  # drawn below the loss line: gone
                _lose_ball(p, I, i)
                if I[i, TERM]:
                    break
            if ale and I[i, IN_PLAY]:  # contacts on last frame's drawn positions, before anything moves
                _ale_paddle_contact(p, F, I, i)
                r += _ale_brick_contact(p, F, I, bricks, i)
                _ale_walls(p, F, I, i)
            if control:
                _paddle_control_frame(p, F, i, act)
            else:
                _paddle_frame(p, F, i, act)
            if not I[i, IN_PLAY]:
                if I[i, SERVE_WAIT] > 0:
                    I[i, SERVE_WAIT] -= 1
                elif auto or act == _FIRE:
                    _serve(p, F, I, rng, i, I[i, STEPS] * frameskip + _f)
                continue
            if ale:
                F[i, BX] += F[i, BVX]
                F[i, BY] += F[i, BVY]
                continue
            r += _legacy_ball_frame(p, F, I, bricks, i)
            if F[i, BY] >= p.lost_y:
                _lose_ball(p, I, i)
                if I[i, TERM]:
                    break
        I[i, SCORE] += r
        I[i, STEPS] += 1
        reward[i] = r
        terminated[i] = I[i, TERM] == 1
        _observe(p, F, I, obs, i)
