"""The numba hot loop of the shadow Breakout: one call advances every env by one agent step.

State is struct-of-arrays, batch first: `F` (float64 per-env reals), `I` (int64 per-env
counters), `bricks` (uint8 live flags, row-major, top row first) and `rng` (one uint64
splitmix64 state per env). Each env only touches its own row and its own RNG stream, so an
env's trajectory depends on its seed alone, never on the batch size or its position in it.

Frame order inside an agent step (per frame): sticky action, paddle, serve, ball move, walls,
bricks, paddle bounce, loss. With `ball_rule == "ale"` the ball part follows the 2600 game instead
(`_ale_ball_frame`): contacts with paddle, bricks and walls are judged on the positions drawn last
frame, then the paddle and the ball move. Physics constants come from `breakout_shadow_params.to_arrays`.
"""

from __future__ import annotations

import numba
import numpy as np

from policylab.envs.breakout_shadow_params import P

# slot of each scalar parameter (module-level ints are compile-time constants for numba)
_BALL_H = P["ball_h"]
_BALL_W = P["ball_w"]
_BRICK_COLS = P["brick_cols"]
_BRICK_COOLDOWN = P["brick_cooldown"]
_BRICK_H = P["brick_h"]
_BRICK_LEFT = P["brick_left"]
_BRICK_ROWS = P["brick_rows"]
_BRICK_TOP = P["brick_top"]
_BRICK_W = P["brick_w"]
_FAST_ROWS = P["fast_rows"]
_FIELD_LEFT = P["field_left"]
_FIELD_RIGHT = P["field_right"]
_FIELD_TOP = P["field_top"]
_FRAMESKIP = P["frameskip"]
_LIVES = P["lives"]
_LOST_Y = P["lost_y"]
_N_LEVELS = P["n_levels"]
_N_ZONES = P["n_zones"]
_PADDLE_ACCEL = P["paddle_accel"]
_PADDLE_BOUNCE_Y = P["paddle_bounce_y"]
_PADDLE_DECEL = P["paddle_decel"]
_PADDLE_H = P["paddle_h"]
_PADDLE_HIT_INSET = P["paddle_hit_inset"]
_PADDLE_INTEGER = P["paddle_integer"]
_PADDLE_MAX_SPEED = P["paddle_max_speed"]
_PADDLE_MAX_X = P["paddle_max_x"]
_PADDLE_MIN_X = P["paddle_min_x"]
_PADDLE_OVERSHOOT_LEFT = P["paddle_overshoot_left"]
_PADDLE_OVERSHOOT_RIGHT = P["paddle_overshoot_right"]
_PADDLE_CHASE = P["paddle_chase"]
_PADDLE_OVERLAP = P["paddle_overlap_rule"]
_PADDLE_CONTROL_MAX = P["paddle_control_max"]
_PADDLE_CONTROL_RES = P["paddle_control_res"]
_PADDLE_CONTROL_START = P["paddle_control_start"]
_N_CONTROL = P["n_control"]
_PADDLE_START_X = P["paddle_start_x"]
_PADDLE_WIDTH = P["paddle_width"]
_PADDLE_WIDTH_SMALL = P["paddle_width_small"]
_PADDLE_Y = P["paddle_y"]
_REPORT_INTEGER = P["report_integer"]
_SERVE_AUTO = P["serve_auto"]
_SERVE_DELAY = P["serve_delay"]
_SERVE_VY = P["serve_vy"]
_N_SERVES = P["n_serves"]
_SERVE_Y = P["serve_y"]
_SHRINK_ON_TOP = P["shrink_on_top"]
_STICKY_PROB = P["sticky_prob"]
_ALE_BALL = P["ale_ball"]
_N_HIT_SPEEDS = P["n_hit_speeds"]
_N_SECTIONS = P["n_sections"]
_BOUNCE_OFFSET_MIN = P["bounce_offset_min"]
_TOP_VX = P["top_vx"]
_TOP_VY = P["top_vy"]
_BRICK_CONTACT_DY = P["brick_contact_dy"]
_BOUNCE_NUDGE_OFFSET = P["bounce_nudge_offset"]
_BOUNCE_NUDGE_PX = P["bounce_nudge_px"]
_BRICK_CONTACT_DX = P["brick_contact_dx"]
_BRICK_CONTACT_W = P["brick_contact_w"]
_BRICK_CONTACT_H = P["brick_contact_h"]
_BRICK_SOLID_H = P["brick_solid_h"]
_BRICK_REARM = P["brick_rearm_on_bounce"]
_SERVE_BY_FRAME = P["serve_by_frame"]
_DISARMED = 1 << 30  # COOLDOWN while bricks wait for a paddle or ceiling bounce (brick_rearm_on_bounce)

# float state slots (PQ: accel model hidden position / control model control value u; PT: control target)
BX, BY, BVX, BVY, PQ, PV, PX, PREV_RX, PREV_RY, PW, PT = range(11)
NF = 11
# int state slots
IN_PLAY, LIVES, SCORE, LEVEL, HITS, COOLDOWN, SERVE_WAIT, LAST_ACT, TERM, SHRUNK, STEPS, PREV_IN_PLAY, LEFT, WALLS = range(14)
NI = 14

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
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
        if p[_REPORT_INTEGER] > 0:
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


@numba.njit(cache=True)
def reset_kernel(p, tab, F, I, bricks, rng, seeds, obs):
    n_bricks = int(p[_BRICK_ROWS] * p[_BRICK_COLS])
    init = seed_states(seeds)
    for i in range(F.shape[0]):
        rng[i] = init[i]
        for k in range(NF):
            F[i, k] = 0.0
        for k in range(NI):
            I[i, k] = 0
        for k in range(bricks.shape[1]):
            bricks[i, k] = 0
        _fill_bricks(bricks, i, n_bricks)
        F[i, PQ] = p[_PADDLE_START_X]
        F[i, PX] = p[_PADDLE_START_X]
        if p[_N_CONTROL] > 0:
            F[i, PQ] = p[_PADDLE_CONTROL_START]
            F[i, PT] = _control_target(p, tab, F[i, PQ])
        F[i, PW] = p[_PADDLE_WIDTH]
        I[i, LIVES] = int(p[_LIVES])
        I[i, SERVE_WAIT] = int(p[_SERVE_DELAY])
        I[i, LEFT] = n_bricks
        _observe(p, F, I, obs, i)


@numba.njit(cache=True, inline="always")
def _control_target(p, tab, u):
    """The game's paddle target x for controller value u: the measured table, indexed by floor(u * res)."""
    n = int(p[_N_CONTROL])
    k = min(max(int(np.floor(u * p[_PADDLE_CONTROL_RES] + 1e-6)), 0), n - 1)
    return tab[6, k]


@numba.njit(cache=True, inline="always")
def _paddle_control_frame(p, tab, F, i, act):
    """ALE's paddle controller: the displayed x chases last frame's target (one-frame lag), then the
    controller value moves one step for LEFT/RIGHT (clamped to its travel) and the game reads a new target."""
    x = F[i, PX]
    x = x + np.floor(p[_PADDLE_CHASE] * (F[i, PT] - x))
    F[i, PX] = min(max(x, p[_PADDLE_MIN_X]), p[_PADDLE_MAX_X])
    u = F[i, PQ]
    if act == _RIGHT:
        u -= 1.0
    elif act == _LEFT:
        u += 1.0
    u = min(max(u, 0.0), p[_PADDLE_CONTROL_MAX])
    F[i, PQ] = u
    F[i, PT] = _control_target(p, tab, u)


@numba.njit(cache=True, inline="always")
def _paddle_frame(p, F, i, act):
    d = 1.0 if act == _RIGHT else (-1.0 if act == _LEFT else 0.0)
    v = F[i, PV]
    vmax = p[_PADDLE_MAX_SPEED]
    if d != 0.0:
        if v * d < 0.0:
            v = 0.0
        v = min(max(v + d * p[_PADDLE_ACCEL], -vmax), vmax)
    else:
        dec = p[_PADDLE_DECEL]
        if v > 0.0:
            v = max(v - dec, 0.0)
        elif v < 0.0:
            v = min(v + dec, 0.0)
    lo = p[_PADDLE_MIN_X]
    hi = p[_PADDLE_MAX_X]
    q = F[i, PQ] + v
    qlo = lo - p[_PADDLE_OVERSHOOT_LEFT]
    qhi = hi + p[_PADDLE_OVERSHOOT_RIGHT]
    if q < qlo:
        q = qlo
        v = 0.0
    elif q > qhi:
        q = qhi
        v = 0.0
    F[i, PQ] = q
    F[i, PV] = v
    x = min(max(q, lo), hi)
    if p[_PADDLE_INTEGER] > 0:
        x = np.floor(x + 0.5)
    F[i, PX] = x


@numba.njit(cache=True, inline="always")
def _serve(p, tab, F, I, rng, i, frame):
    """Put a ball in play from serve pair k: drawn from the RNG, or `frame` (frames since reset) mod n."""
    n = int(p[_N_SERVES])
    if p[_SERVE_BY_FRAME] > 0:
        k = frame % n
    else:
        k = min(int(_uniform(rng, i) * n), n - 1)
    F[i, BX] = tab[4, k]
    F[i, BY] = p[_SERVE_Y]
    F[i, BVX] = tab[5, k]
    F[i, BVY] = p[_SERVE_VY]
    I[i, IN_PLAY] = 1
    I[i, LEVEL] = 0
    I[i, HITS] = 0
    if p[_BRICK_REARM] > 0:
        I[i, COOLDOWN] = 0


@numba.njit(cache=True, inline="always")
def _take_brick(tab, I, bricks, i, r, c, rows, cols):
    """Remove brick (r, c) of env i, refill the wall once when it is cleared; return its points."""
    bricks[i, r * cols + c] = 0
    I[i, LEFT] -= 1
    if I[i, LEFT] == 0 and I[i, WALLS] == 0:
        I[i, WALLS] = 1
        _fill_bricks(bricks, i, rows * cols)
        I[i, LEFT] = rows * cols
    return int(tab[0, r])


@numba.njit(cache=True, inline="always")
def _hit_brick(p, tab, F, I, bricks, i, y_old):
    """Remove the first live brick the ball overlaps (nearest row along its travel); return points.

    The ball goes back to its height before this frame and reverses, so it leaves the brick row
    instead of eating along it.
    """
    if I[i, COOLDOWN] > 0:
        I[i, COOLDOWN] -= 1
        return 0
    rows = int(p[_BRICK_ROWS])
    cols = int(p[_BRICK_COLS])
    bh = p[_BRICK_H]
    bw = p[_BRICK_W]
    top = p[_BRICK_TOP]
    left = p[_BRICK_LEFT]
    x = F[i, BX]
    y = F[i, BY]
    r0 = int(np.floor((y - top) / bh))
    r1 = int(np.floor((y + p[_BALL_H] - 1e-6 - top) / bh))
    if r1 < 0 or r0 >= rows:
        return 0
    c0 = int(np.floor((x - left) / bw))
    c1 = int(np.floor((x + p[_BALL_W] - 1e-6 - left) / bw))
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
                I[i, COOLDOWN] = int(p[_BRICK_COOLDOWN])
                if r < p[_FAST_ROWS]:
                    I[i, LEVEL] = int(p[_N_LEVELS]) - 1
                    F[i, BVY] = np.sign(F[i, BVY]) * p[_PADDLE_BOUNCE_Y] * tab[1, I[i, LEVEL]]
                return _take_brick(tab, I, bricks, i, r, c, rows, cols)
    return 0


@numba.njit(cache=True, inline="always")
def _paddle_bounce(p, tab, F, I, i):
    bh = p[_BALL_H]
    py = p[_PADDLE_Y]
    y = F[i, BY]
    vy = F[i, BVY]
    overlap = p[_PADDLE_OVERLAP] > 0
    if vy <= 0.0:
        return
    if overlap:  # ALE: any frame on which the falling ball overlaps the paddle rows
        if y + bh <= py or y >= py + p[_PADDLE_H]:
            return
    elif y + bh < py or y + bh - vy >= py + p[_PADDLE_H]:
        return
    x = F[i, BX]
    bw = p[_BALL_W]
    inset = p[_PADDLE_HIT_INSET]
    lo = F[i, PX] + inset
    hi = F[i, PX] + F[i, PW] - inset
    if x + bw <= lo or x >= hi:
        return
    if not overlap:
        F[i, BY] = py - bh
    hits = I[i, HITS] + 1
    I[i, HITS] = hits
    nl = int(p[_N_LEVELS])
    for k in range(nl - 1):
        if hits == tab[2, k] and I[i, LEVEL] < k + 1:
            I[i, LEVEL] = k + 1
    F[i, BVY] = -p[_PADDLE_BOUNCE_Y] * tab[1, I[i, LEVEL]]
    nz = int(p[_N_ZONES])
    u = (x + 0.5 * bw - lo) / max(hi - lo, 1e-9)
    z = min(max(int(np.floor(u * nz)), 0), nz - 1)
    F[i, BVX] = tab[3, z]


@numba.njit(cache=True, inline="always")
def _ale_speed(p, tab, I, i, steep):
    """(|vx|, |vy|) for the ball's paddle-hit count (or the top speed after a fast-row brick)."""
    if I[i, LEVEL] > 0:
        return p[_TOP_VX], p[_TOP_VY]
    k = min(max(I[i, HITS], 1), int(p[_N_HIT_SPEEDS])) - 1
    o = 4 * k + (2 if steep else 0)
    return tab[7, o], tab[7, o + 1]


@numba.njit(cache=True, inline="always")
def _ale_paddle_contact(p, tab, F, I, i):
    """A falling ball drawn over the paddle rows and columns turns up; the section of the paddle it met
    (offset floor(x) - paddle x, scaled to 16 px) picks direction and shallow/steep angle."""
    y = F[i, BY]
    py = p[_PADDLE_Y]
    if F[i, BVY] <= 0.0 or y + p[_BALL_H] <= py or y >= py + p[_PADDLE_H]:
        return
    x = np.floor(F[i, BX])
    px = F[i, PX]
    pw = F[i, PW]
    if x + p[_BALL_W] <= px or x >= px + pw:
        return
    off = int(np.floor((x - px) * 16.0 / pw))
    sec = tab[8, min(max(off - int(p[_BOUNCE_OFFSET_MIN]), 0), int(p[_N_SECTIONS]) - 1)]
    if off == int(p[_BOUNCE_NUDGE_OFFSET]):
        F[i, BX] -= p[_BOUNCE_NUDGE_PX] if F[i, BVX] > 0.0 else -p[_BOUNCE_NUDGE_PX]
    I[i, HITS] += 1
    if p[_BRICK_REARM] > 0:
        I[i, COOLDOWN] = 0
    vx, vy = _ale_speed(p, tab, I, i, abs(sec) < 1.5)
    F[i, BVX] = vx if sec > 0 else -vx
    F[i, BVY] = -vy


@numba.njit(cache=True, inline="always")
def _ale_brick_contact(p, tab, F, I, bricks, i):
    """The first live brick under the drawn ball (nearest row along its travel) goes; vy reverses.
    A brick of the top `fast_rows` rows sets the top speed for the rest of this ball. Returns points."""
    if I[i, COOLDOWN] > 0:
        I[i, COOLDOWN] -= 1
        return 0
    rows = int(p[_BRICK_ROWS])
    cols = int(p[_BRICK_COLS])
    x = np.floor(F[i, BX]) + p[_BRICK_CONTACT_DX]
    y = np.floor(F[i, BY]) - p[_BRICK_CONTACT_DY]
    h = int(p[_BRICK_CONTACT_H]) if p[_BRICK_CONTACT_H] > 0 else int(p[_BALL_H])
    bh = p[_BRICK_H]
    solid = p[_BRICK_SOLID_H] if p[_BRICK_SOLID_H] > 0 else bh
    if y + h <= p[_BRICK_TOP] or y >= p[_BRICK_TOP] + rows * bh:
        return 0
    c0 = max(int(np.floor((x - p[_BRICK_LEFT]) / p[_BRICK_W])), 0)
    c1 = min(int(np.floor((x + p[_BRICK_CONTACT_W] - 1.0 - p[_BRICK_LEFT]) / p[_BRICK_W])), cols - 1)
    up = F[i, BVY] < 0.0
    for k in range(h):  # judged lines, the lowest first going up (the row it came from), the highest going down
        d = y + (h - 1 - k if up else k) - p[_BRICK_TOP]
        r = int(np.floor(d / bh))
        if r < 0 or r >= rows or d - r * bh >= solid:
            continue
        for c in range(c0, c1 + 1):
            if bricks[i, r * cols + c]:
                F[i, BVY] = -F[i, BVY]
                if r < p[_FAST_ROWS] and I[i, LEVEL] == 0:
                    I[i, LEVEL] = 1
                    F[i, BVX] = p[_TOP_VX] if F[i, BVX] > 0.0 else -p[_TOP_VX]
                    F[i, BVY] = p[_TOP_VY] if F[i, BVY] > 0.0 else -p[_TOP_VY]
                I[i, COOLDOWN] = _DISARMED if p[_BRICK_REARM] > 0 else int(p[_BRICK_COOLDOWN])
                return _take_brick(tab, I, bricks, i, r, c, rows, cols)
    return 0


@numba.njit(cache=True, inline="always")
def _ale_walls(p, F, I, i):
    """Walls flip the velocity once the drawn ball is past them (no mirroring of the position)."""
    x = np.floor(F[i, BX])
    if x < p[_FIELD_LEFT]:
        F[i, BVX] = abs(F[i, BVX])
    elif x > p[_FIELD_RIGHT] - p[_BALL_W]:
        F[i, BVX] = -abs(F[i, BVX])
    if np.floor(F[i, BY]) < p[_FIELD_TOP] and F[i, BVY] < 0.0:
        F[i, BVY] = -F[i, BVY]
        if p[_BRICK_REARM] > 0:
            I[i, COOLDOWN] = 0
        if p[_SHRINK_ON_TOP] > 0 and not I[i, SHRUNK]:
            I[i, SHRUNK] = 1
            F[i, PW] = p[_PADDLE_WIDTH_SMALL]


@numba.njit(cache=True, inline="always")
def _lose_ball(p, I, i):
    I[i, IN_PLAY] = 0
    I[i, LIVES] -= 1
    I[i, SERVE_WAIT] = int(p[_SERVE_DELAY])
    if I[i, LIVES] <= 0:
        I[i, TERM] = 1


@numba.njit(cache=True, inline="always")
def _legacy_ball_frame(p, tab, F, I, bricks, i):
    """Move, mirror at the walls, hit a brick, bounce on the paddle (the `legacy` ball rule); returns points."""
    y_old = F[i, BY]
    x = F[i, BX] + F[i, BVX]
    y = y_old + F[i, BVY]
    lo = p[_FIELD_LEFT]
    hi = p[_FIELD_RIGHT] - p[_BALL_W]
    if x < lo:
        x = 2.0 * lo - x
        F[i, BVX] = -F[i, BVX]
    elif x > hi:
        x = 2.0 * hi - x
        F[i, BVX] = -F[i, BVX]
    top = p[_FIELD_TOP]
    if y < top:
        y = 2.0 * top - y
        F[i, BVY] = -F[i, BVY]
        if p[_SHRINK_ON_TOP] > 0 and not I[i, SHRUNK]:
            I[i, SHRUNK] = 1
            F[i, PW] = p[_PADDLE_WIDTH_SMALL]
    F[i, BX] = x
    F[i, BY] = y
    r = _hit_brick(p, tab, F, I, bricks, i, y_old)
    _paddle_bounce(p, tab, F, I, i)
    return r


@numba.njit(cache=True)
def step_kernel(p, tab, F, I, bricks, rng, actions, obs, reward, terminated, max_steps):
    frameskip = int(p[_FRAMESKIP])
    sticky = p[_STICKY_PROB]
    auto = p[_SERVE_AUTO] > 0
    control = p[_N_CONTROL] > 0
    ale = p[_ALE_BALL] > 0
    for i in range(F.shape[0]):
        reward[i] = 0.0
        if I[i, TERM] or (max_steps > 0 and I[i, STEPS] >= max_steps):
            terminated[i] = I[i, TERM] == 1
            continue
        a = actions[i]
        r = 0
        for _f in range(frameskip):
            act = a
            if sticky > 0.0 and _uniform(rng, i) < sticky:
                act = I[i, LAST_ACT]
            I[i, LAST_ACT] = act
            if ale and I[i, IN_PLAY] and np.floor(F[i, BY]) >= p[_LOST_Y]:  # drawn below the loss line: gone
                _lose_ball(p, I, i)
                if I[i, TERM]:
                    break
            if ale and I[i, IN_PLAY]:  # contacts on last frame's drawn positions, before anything moves
                _ale_paddle_contact(p, tab, F, I, i)
                r += _ale_brick_contact(p, tab, F, I, bricks, i)
                _ale_walls(p, F, I, i)
            if control:
                _paddle_control_frame(p, tab, F, i, act)
            else:
                _paddle_frame(p, F, i, act)
            if not I[i, IN_PLAY]:
                if I[i, SERVE_WAIT] > 0:
                    I[i, SERVE_WAIT] -= 1
                elif auto or act == _FIRE:
                    _serve(p, tab, F, I, rng, i, I[i, STEPS] * frameskip + _f)
                continue
            if ale:
                F[i, BX] += F[i, BVX]
                F[i, BY] += F[i, BVY]
                continue
            r += _legacy_ball_frame(p, tab, F, I, bricks, i)
            if F[i, BY] >= p[_LOST_Y]:
                _lose_ball(p, I, i)
                if I[i, TERM]:
                    break
        I[i, SCORE] += r
        I[i, STEPS] += 1
        reward[i] = r
        terminated[i] = I[i, TERM] == 1
        _observe(p, F, I, obs, i)

