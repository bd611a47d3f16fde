"""The Breakout vector env (`envs/breakout/vector.py`) against ale-py's own `AtariVectorEnv`, stepped side by
side on the same seeds and random actions: observations (4 x 84 x 84 stacks), rewards, terminations,
truncations and every `info` array equal on every step, through game overs and NextStep autoresets."""

from __future__ import annotations

import subprocess
import sys

import cv2
import gymnasium as gym
import numpy as np
import pytest

import policylab  # noqa: F401  (registers policylab/Breakout-v5)
from policylab.envs.breakout.registration import GYM_ID
from policylab.envs.breakout.vector import BreakoutVectorEnv
from policylab.errors import BadInput
from policylab.rollout.seeds import named_range
from tests.support.paths import ROOT

ale_py = pytest.importorskip("ale_py")
SEEDS = named_range("breakout", "vector").first(3)


def _random_actions(rng, env, n_envs: int) -> np.ndarray:
    """Uniform random actions of the env's space: indices, or (radius, angle, fire) float32 triples."""
    if env.continuous:
        low, high = env.single_action_space.low, env.single_action_space.high
        return rng.uniform(low, high, (n_envs, 3)).astype(np.float32)
    return rng.integers(0, env.single_action_space.n, n_envs)


def _lockstep(n_envs: int, steps: int, seed: int, **kwargs) -> dict[str, int]:
    """Step both envs with the same random actions; assert equality of everything on every step. Returns
    how many terminations, truncations and nonzero rewards were met (so a test can require them)."""
    ale = ale_py.AtariVectorEnv("breakout", num_envs=n_envs, **kwargs)
    ours = BreakoutVectorEnv(n_envs, **kwargs)
    (oa, ia), (ob, ib) = ale.reset(seed=seed), ours.reset(seed=seed)
    np.testing.assert_array_equal(ob, oa)
    for k in ia:
        np.testing.assert_array_equal(ib[k], ia[k], err_msg=f"reset info {k}")
    rng = np.random.default_rng(seed)
    seen = {"terminated": 0, "truncated": 0, "rewards": 0}
    for t in range(steps):
        actions = _random_actions(rng, ours, n_envs)
        ra, rb = ale.step(actions), ours.step(actions)
        for name, x, y in zip(("obs", "reward", "terminated", "truncated"), ra[:4], rb[:4]):
            assert y.dtype == x.dtype and y.shape == x.shape, (name, y.dtype, x.dtype)
            np.testing.assert_array_equal(y, x, err_msg=f"step {t}: {name}")
        assert ra[4].keys() == rb[4].keys()
        for k in ra[4]:
            np.testing.assert_array_equal(rb[4][k], ra[4][k], err_msg=f"step {t}: info {k}")
        seen["terminated"] += int(ra[2].sum())
        seen["truncated"] += int(ra[3].sum())
        seen["rewards"] += int((ra[1] != 0).sum())
    ale.close()
    return seen


@pytest.mark.slow
def test_equals_ale_vector_env_through_game_overs():
    seen = _lockstep(8, 1200, SEEDS[0], noop_max=0)
    assert seen["terminated"] >= 4 and seen["rewards"] > 20  # game overs and autoresets were exercised


def test_equals_ale_vector_env_with_its_noop_starts():
    """The default noop_max=30: ale-py's noop stream (seeded resets and the autoresets after game overs)."""
    seen = _lockstep(6, 700, SEEDS[1], noop_max=30)
    assert seen["terminated"] >= 2


def test_equals_ale_vector_env_with_truncation_unclipped_rewards_and_frameskip_5():
    seen = _lockstep(4, 250, SEEDS[1], noop_max=0, max_num_frames_per_episode=300, reward_clipping=False, frameskip=5)
    assert seen["truncated"] >= 4 and seen["rewards"] > 0


def test_equals_ale_vector_env_without_maxpool_and_at_another_size():
    _lockstep(5, 200, SEEDS[2], noop_max=0, maxpool=False, img_height=64, img_width=72, stack_num=2)


def test_stream_bytes_copies_exactly_the_range_at_any_alignment():
    """`stream_bytes` (non-temporal stores from the destination's first 16-byte boundary, a plain copy before and
    after it) against slicing: every offset of either array modulo 16 and lengths around the boundaries, each
    byte outside the range left as it was."""
    import numba

    from policylab.envs.breakout import vector_kernel

    @numba.njit(_nrt=False)
    def copy(dst, dst_at, src, src_at, count):
        vector_kernel.stream_bytes(dst, dst_at, src, src_at, count)
        vector_kernel.store_fence()

    rng = np.random.default_rng(SEEDS[1])
    src = rng.integers(0, 256, 512, dtype=np.uint8)
    for dst_at in range(16):
        for src_at in (0, 3, 16, 29):
            for count in (0, 1, 15, 16, 17, 31, 32, 33, 100, 255):
                dst = rng.integers(0, 256, 512, dtype=np.uint8)
                want = dst.copy()
                want[dst_at : dst_at + count] = src[src_at : src_at + count]
                copy(dst, dst_at, src, src_at, count)
                np.testing.assert_array_equal(dst, want, err_msg=f"{dst_at=} {src_at=} {count=}")


def test_prefetch_compiles_to_a_prefetch_and_changes_nothing():
    """`prefetch` (the step kernel's hint for the next envs' rows, `_prefetch_ahead`) must reach the machine code
    as a prefetch instruction, not be dropped by the compiler, and leave every byte and result as they were, at
    any offset of any array the kernel hands it (int64 rows, uint8 layers, the last byte)."""
    import numba

    from policylab.envs.breakout import vector_kernel

    @numba.njit(_nrt=False)
    def total_after_hints(a, step):
        t = 0
        for k in range(a.shape[0]):
            vector_kernel.prefetch(a, (k * step) % (a.size * a.itemsize))
            t += a[k]
        return t

    rng = np.random.default_rng(SEEDS[2])
    for a in (rng.integers(-(2**40), 2**40, 300), rng.integers(0, 256, 1000).astype(np.uint8)):
        before = a.copy()
        for step in (1, 64, 4095):
            assert total_after_hints(a, step) == int(before.sum(dtype=np.int64))
        np.testing.assert_array_equal(a, before)
    asm = "\n".join(total_after_hints.inspect_asm(sig) for sig in total_after_hints.signatures)
    assert asm.count("prefetcht0") >= 2, "the hint was compiled away"


def test_observations_written_past_the_cache_equal_the_envs_own_stacks():
    """Observations larger than `STREAM_BYTES` are written with non-temporal stores (`stream_bytes`), 16 bytes at
    a time from each stack's first 16-byte boundary: an odd frame size (83 x 85) puts every other env's stack off
    the boundary, so the unaligned head and tail are exercised, through truncations and their autoresets. Each
    step's observation must equal the env's stacks copied the ordinary way (`stacks`, whose ring the lockstep
    tests against ale-py check; ale-py itself takes some 20 s to build and reset this many envs)."""
    from policylab.envs.breakout import vector_kernel

    n = vector_kernel.STREAM_BYTES // (4 * 83 * 85) + 1
    assert n * 4 * 83 * 85 > vector_kernel.STREAM_BYTES and (4 * 83 * 85) % 16 != 0
    env = BreakoutVectorEnv(n, noop_max=0, max_num_frames_per_episode=80, img_height=83, img_width=85)
    env.reset(seed=SEEDS[0])
    rng = np.random.default_rng(SEEDS[0])
    truncated = 0
    for t in range(40):
        obs, _, _, trunc, _ = env.step(rng.integers(0, 4, n))
        np.testing.assert_array_equal(obs, env._handed_out(), err_msg=f"step {t}")
        assert obs.any(axis=(1, 2, 3)).all()  # every env's stack was written
        truncated += int(trunc.sum())
    assert truncated >= n


def test_equals_ale_vector_env_at_frameskip_2_and_1_without_maxpool():
    _lockstep(4, 150, SEEDS[0], frameskip=2)
    _lockstep(4, 150, SEEDS[1], frameskip=1, maxpool=False)


def test_the_newest_frame_is_the_single_envs_screen_resized():
    """One renderer: without max-pooling, each step's newest frame is the single env's grayscale screen of the
    same state (`rom.render`) through OpenCV's INTER_AREA. numba caches `vector_kernel` with compiled copies of
    `rom.render` and `rom.kernel` keyed on vector_kernel.py alone, so this also catches a cache left stale by a
    change to either (clear `envs/breakout/__pycache__/vector_kernel.*.nb*`)."""
    from policylab.envs.breakout.rom.render import GRAY, render_colours

    env = BreakoutVectorEnv(3, noop_max=0, maxpool=False)
    env.reset(seed=SEEDS[0])
    rng = np.random.default_rng(SEEDS[0])
    compared = 0
    for _ in range(300):
        obs, _, terminated, truncated, _ = env.step(rng.integers(0, 4, 3))
        for i in np.flatnonzero(~(terminated | truncated)):
            screen = GRAY[render_colours(env._games.state[i]) >> 1]
            np.testing.assert_array_equal(obs[i, -1], cv2.resize(screen, (84, 84), interpolation=cv2.INTER_AREA))
            compared += 1
    assert compared > 800


def test_noop_counts_vary_with_the_seed():
    ours = BreakoutVectorEnv(6, noop_max=30)
    counts = set()
    for seed in SEEDS:
        counts |= set(ours.reset(seed=seed)[1]["frame_number"].tolist())
    assert len(counts) > 5 and max(counts) <= 30


def test_make_vec_builds_it_with_ale_spaces():
    env = gym.make_vec(GYM_ID, num_envs=3, vectorization_mode="vector_entry_point", noop_max=0)
    assert isinstance(env, BreakoutVectorEnv)
    ref = ale_py.AtariVectorEnv("breakout", num_envs=3)
    assert env.single_observation_space == ref.single_observation_space
    assert env.single_action_space == ref.single_action_space
    assert env.observation_space == ref.observation_space
    assert env.metadata["autoreset_mode"] == ref.metadata["autoreset_mode"]
    obs, info = env.reset(seed=SEEDS[0])
    assert obs.shape == (3, 4, 84, 84) and set(info) == {"env_id", "lives", "frame_number", "episode_frame_number"}


def test_equals_ale_vector_env_with_sticky_actions():
    """Each env's sticky stream is ALE's for its seed, drawn on every frame, the reset's FIRE and noops too."""
    seen = _lockstep(4, 500, SEEDS[2], repeat_action_probability=0.25)
    assert seen["terminated"] >= 1


def test_equals_ale_vector_env_with_episodic_life():
    """A lost life terminates the step and the game is reset on the next."""
    seen = _lockstep(4, 300, SEEDS[0], noop_max=0, episodic_life=True)
    assert seen["terminated"] >= 8


def test_equals_ale_vector_env_with_life_loss_info():
    """A lost life terminates the step; the game goes on (only a game over resets it)."""
    seen = _lockstep(4, 500, SEEDS[1], life_loss_info=True, repeat_action_probability=0.25)
    assert seen["terminated"] >= 8


def test_equals_ale_vector_env_in_rgb():
    _lockstep(3, 150, SEEDS[2], noop_max=0, grayscale=False)


def test_equals_ale_vector_env_with_the_full_and_the_continuous_action_space():
    _lockstep(3, 200, SEEDS[0], full_action_space=True, repeat_action_probability=0.25)
    _lockstep(3, 200, SEEDS[1], continuous=True, repeat_action_probability=0.25)


def test_equals_ale_vector_env_at_frameskip_1_with_maxpool():
    """At frameskip 1 ale-py's pool has one frame: the observation is the frame itself."""
    _lockstep(3, 200, SEEDS[2], frameskip=1, noop_max=0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"batch_size": 3},
        {"autoreset_mode": "Sometimes"},
        {"game": "pong"},
        {"img_height": 300},
        {"frameskip": 0},
        {"repeat_action_probability": 1.5},
        {"max_num_frames_per_episode": 0},
    ],
)
def test_unsupported_settings_are_one_clear_error(kwargs):
    with pytest.raises(BadInput):
        BreakoutVectorEnv(2, **kwargs)


def test_refusals_are_the_exception_types_ale_py_raises():
    """ale-py raises gymnasium.error.Error for a bad frameskip; ours is that and a BadInput."""
    for frameskip in (0, 2.5):
        with pytest.raises(gym.error.Error):
            ale_py.AtariVectorEnv("breakout", 2, frameskip=frameskip)
        with pytest.raises(gym.error.Error) as err:
            BreakoutVectorEnv(2, frameskip=frameskip)
        assert isinstance(err.value, BadInput) and err.value.field == "frameskip"


def test_bad_actions_are_one_clear_error():
    env = BreakoutVectorEnv(2)
    env.reset(seed=SEEDS[0])
    with pytest.raises(BadInput):
        env.step(np.array([0, 4]))


def test_import_policylab_registers_without_importing_gymnasium():
    code = (
        "import sys, policylab; assert 'gymnasium' not in sys.modules; import gymnasium; "
        f"assert {GYM_ID!r} in gymnasium.registry"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


@pytest.mark.slow
def test_an_idle_episode_into_attract_mode_equals_ale_vector_env():
    """NOOPs without a FIRE reset (and noop starts, which do not count towards truncation): no ball is ever served, the game drops into attract mode after 65,536 frames
    and cycles its colours (drawn a frame late; the lower field a line higher while the paddle's colour is 0,
    from frame 91,137), to the 108,000-frame truncation."""
    n = 2
    kwargs = dict(use_fire_reset=False, noop_max=30)
    ale = ale_py.AtariVectorEnv("breakout", num_envs=n, **kwargs)
    ours = BreakoutVectorEnv(n, **kwargs)
    np.testing.assert_array_equal(ours.reset(seed=SEEDS[2])[0], ale.reset(seed=SEEDS[2])[0])
    noops = np.zeros(n, dtype=np.int64)
    for t in range(108_000 // 4 + 1):
        ra, rb = ale.step(noops), ours.step(noops)
        for name, x, y in zip(("obs", "reward", "terminated", "truncated"), ra[:4], rb[:4]):
            np.testing.assert_array_equal(y, x, err_msg=f"step {t}: {name}")
        for k in ra[4]:
            np.testing.assert_array_equal(rb[4][k], ra[4][k], err_msg=f"step {t}: info {k}")
        if ra[3].all():
            break
    assert ra[3].all() and (ra[4]["episode_frame_number"] > 91_137 + 256).all()
    ale.close()


def test_a_reset_without_a_seed_keeps_each_envs_streams_as_ale_py():
    """ale-py's reset(seed=None) reseeds nothing (seed -1): each env's noop and sticky streams and frame count go
    on from where the seeded run left them, so the run stays reproducible (the env drew fresh entropy before)."""
    kwargs = dict(noop_max=30, repeat_action_probability=0.25)
    ale = ale_py.AtariVectorEnv("breakout", num_envs=3, **kwargs)
    ours = BreakoutVectorEnv(3, **kwargs)
    rng = np.random.default_rng(40_071)
    for seed in (40_071, None, None):
        (oa, ia), (ob, ib) = ale.reset(seed=seed), ours.reset(seed=seed)
        np.testing.assert_array_equal(ob, oa)
        for k in ia:
            np.testing.assert_array_equal(ib[k], ia[k], err_msg=f"reset {seed}: info {k}")
        for t in range(60):
            actions = rng.integers(0, 4, 3)
            for x, y in zip(ale.step(actions)[:4], ours.step(actions)[:4]):
                np.testing.assert_array_equal(y, x, err_msg=f"reset {seed}, step {t}")
    ale.close()


@pytest.mark.parametrize("grayscale", [True, False])
def test_writing_into_a_returned_observation_changes_nothing_later(grayscale):
    """The caller owns what reset and step return, as with ale-py: scribbling over it must not reach the next
    step's stack (the kernel builds it from the env's own), here against a twin env left alone."""
    kwargs = {"grayscale": grayscale, "repeat_action_probability": 0.0}
    scribbled, clean = BreakoutVectorEnv(2, **kwargs), BreakoutVectorEnv(2, **kwargs)
    (obs, _), (ref, _) = scribbled.reset(seed=SEEDS[0]), clean.reset(seed=SEEDS[0])
    rng = np.random.default_rng(SEEDS[0])
    for t in range(40):
        np.testing.assert_array_equal(obs, ref, err_msg=f"step {t}")
        obs[:] = 255 - obs  # a caller's in-place preprocessing
        actions = rng.integers(0, 4, 2)
        obs, ref = scribbled.step(actions)[0], clean.step(actions)[0]
    np.testing.assert_array_equal(obs, ref)


@pytest.mark.parametrize("grayscale", [True, False])
def test_the_paddle_memo_draws_what_the_edges_draw(grayscale):
    """The rows around the paddle come from the memo (`vector_kernel._paddle_band`) when an env's still rows there
    are interned; a twin whose table of them is full draws the paddle's moved edges instead. Both must give the
    same bytes, the memo must have been used, and every env of the twin must have had no band to use."""
    kwargs = {"grayscale": grayscale, "repeat_action_probability": 0.25}
    memo, edges = BreakoutVectorEnv(4, **kwargs), BreakoutVectorEnv(4, **kwargs)
    edges._memo.bands_n[0] = edges._memo.bands.shape[0]  # no slot left: every env's band is -1
    (obs, _), (ref, _) = memo.reset(seed=SEEDS[1]), edges.reset(seed=SEEDS[1])
    rng = np.random.default_rng(SEEDS[1])
    for t in range(300):
        np.testing.assert_array_equal(obs, ref, err_msg=f"step {t}")
        actions = rng.integers(0, 4, 4)
        obs, ref = memo.step(actions)[0], edges.step(actions)[0]
    np.testing.assert_array_equal(obs, ref)
    assert (memo._games.band >= 0).all() and (edges._games.band == -1).all()
    assert (memo._memo.paddle_keys >= 0).sum() > 50 and (edges._memo.paddle_keys == -1).all()


@pytest.mark.parametrize("grayscale,n", [(True, 3), (False, 3), (True, 160)])
def test_returned_observations_held_by_the_caller_are_never_reused(grayscale, n):
    """The env reuses an array it handed out once the caller has let go of it (`BreakoutVectorEnv._new_stacks`),
    and above `STREAM_BYTES` (160 envs) writes each step's stacks over several steps (`vector_kernel.step_kernel`'s
    `ahead`): an observation the caller holds, whole or as a view of part of it, must keep its bytes, while
    dropped ones are reused (a handful of buffers over many steps)."""
    from policylab.envs.breakout import vector_kernel

    env = BreakoutVectorEnv(n, grayscale=grayscale, repeat_action_probability=0.0)
    assert (env._out.obs.nbytes > vector_kernel.STREAM_BYTES) == (n == 160)
    obs, _ = env.reset(seed=SEEDS[2])
    rng = np.random.default_rng(SEEDS[2])
    held, views = [], []
    for t in range(30):
        obs = env.step(rng.integers(0, 4, n))[0]
        if t % 3 == 0:
            held.append((obs, obs.copy()))
        elif t % 3 == 1:
            views.append((obs[1:, -1], obs[1:, -1].copy()))  # a view keeps the whole array alive
    for t, (kept, copy) in enumerate(held + views):
        np.testing.assert_array_equal(kept, copy, err_msg=f"held observation {t}")
    buffers = set()
    for _ in range(30):
        buffers.add(env.step(rng.integers(0, 4, n))[0].__array_interface__["data"][0])
    assert len(buffers) <= env._out.obs.shape[1] + 2, len(buffers)  # the stacks written at once, and a spare
