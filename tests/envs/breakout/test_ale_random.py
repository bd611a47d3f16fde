"""ALE's sticky-action stream (`envs/breakout/ale_random.py`): the generator against numpy's MT19937, the frames it
predicts against the real ALE (RAM every frame, frameskip 1 and 4), and the shadow drawing it (`rng: ale`)."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from benchmarks import ale_random_agreement
from policylab.envs.breakout import ale_random
from policylab.envs.breakout.ale import AleBreakout, Protocol
from policylab.envs.breakout.contract import LEFT, NOOP, RIGHT, F
from policylab.envs.breakout.params import load_preset
from policylab.envs.breakout.physics import kernel as physics_kernel
from policylab.envs.breakout.shadow import ShadowBreakout
from policylab.errors import BadInput
from policylab.rollout.seeds import named_range

STICKY = Protocol().sticky  # the default protocol's 0.25
SEEDS = named_range("breakout", "eval").first(2) + named_range("breakout", "validation").first(1)


@numba.njit
def _outputs(mt, n):
    out = np.empty(n, dtype=np.uint64)
    for k in range(n):
        out[k] = ale_random.mt_next(mt, 0)
    return out


@pytest.mark.parametrize("seed", [0, 1, 5489, 2**31 - 1, 2**32 - 1, 2**32 + 7])
def test_the_stream_is_mt19937_seeded_as_init_genrand(seed):
    """numpy's legacy RandomState seeds MT19937 with init_genrand(seed) for a 32-bit seed, as std::mt19937 does;
    a full-range uint32 randint is its raw output. 2000 outputs cross three twists; seeds wrap mod 2**32."""
    mt, buf = ale_random.new_state(1)
    ale_random.seed_all(mt, buf, np.array([seed], dtype=np.int64))
    want = np.random.RandomState(seed % 2**32).randint(0, 2**32, size=2000, dtype=np.uint32)
    assert np.array_equal(_outputs(mt, 2000), want)


@pytest.mark.parametrize("seed", SEEDS)
def test_ale_repeats_exactly_the_frames_the_stream_predicts(seed):
    """ALE at frameskip 1 with sticky 0.25, RAM after every frame, against a fresh sticky-0 ALE fed the
    actions the stream says ALE applied; a prediction from the next seed's stream must fail."""
    got = ale_random_agreement.first_mismatch(seed, 1, 3000, STICKY)
    assert got["first_mismatch_step"] is None
    assert got["frames"] >= 1500 and got["repeats_that_changed_the_action"] >= 100  # a long game, many decisions
    assert (
        ale_random_agreement.first_mismatch(seed, 1, 3000, STICKY, stream_seed=seed + 1)["first_mismatch_step"]
        is not None
    )


def test_frameskip_4_draws_each_frame_of_an_agent_step():
    """The default protocol: frameskip 4 with sticky 0.25 equals frameskip 1, sticky 0, with the stream's
    per-frame actions (each agent step's action asked for on its 4 frames), RAM at every agent step."""
    got = ale_random_agreement.first_mismatch(SEEDS[1], 4, 750, STICKY)
    assert got["first_mismatch_step"] is None and got["steps"] >= 400


def _intended(seed: int, n_frames: int) -> np.ndarray:
    """Per-frame actions whose every sticky decision matters: each frame asks for another action than the
    last (NOOP, FIRE, RIGHT, LEFT cycled with random skips)."""
    steps = np.random.default_rng(seed).integers(1, 4, size=n_frames)
    return np.cumsum(steps) % 4


@numba.njit
def _by_steps(mt, buf, prob, n, steps):
    out = np.empty(steps * n, dtype=np.bool_)
    for t in range(steps):
        bits = ale_random.step_repeats(mt, buf, 0, prob, n)
        for f in range(n):
            out[t * n + f] = (bits >> np.uint64(f)) & np.uint64(1)
    return out


@pytest.mark.parametrize("n", [2, 4, 7, 16])
def test_decisions_drawn_a_step_at_a_time_are_the_frames_decisions(n):
    """`step_repeats` (one agent step of n frames, as the shadow kernel draws) gives the per-frame decisions in order,
    across refills (63 // n * n frames each) and twists (every 312 frames)."""
    mt, buf = ale_random.new_state(1)
    ale_random.seed_all(mt, buf, np.array([SEEDS[0]], dtype=np.int64))
    steps = 2000 // n
    assert np.array_equal(_by_steps(mt, buf, STICKY, n, steps), ale_random.sticky_repeats(SEEDS[0], steps * n, STICKY))


def test_the_stream_is_drawn_even_without_sticky_actions():
    """ALE draws two outputs per frame whatever the probability: at 0 nothing repeats, at 1 nothing but NOOP."""
    assert not ale_random.sticky_repeats(SEEDS[0], 1000, 0.0).any()
    assert (ale_random.applied_actions(SEEDS[0], np.full(100, LEFT), 0.999999) == NOOP).mean() > 0.99
    rep = ale_random.sticky_repeats(SEEDS[0], 100_000, STICKY)
    assert abs(rep.mean() - STICKY) < 0.01
    assert np.array_equal(rep[:10], ale_random.sticky_repeats(SEEDS[0], 10, STICKY))


@pytest.mark.parametrize("frameskip", [1, 4])
def test_the_shadow_applies_the_frames_ale_applies(frameskip):
    """A shadow with rng 'ale' applies, on every frame, the action `applied_actions` gives for its seed; each env of a
    batch as if alone."""
    seeds = np.array(SEEDS, dtype=np.int64)
    params = load_preset("atari-cal", rng="ale", frameskip=frameskip)
    env = ShadowBreakout(len(seeds), params, seeds=seeds)
    env.reset()
    steps = 400
    asked = np.stack([_intended(int(s), steps) for s in seeds], axis=1)
    last = []
    for t in range(steps):
        env.step(asked[t])
        last.append(env._I[:, physics_kernel.LAST_ACT].copy())
    last = np.array(last)
    for j, s in enumerate(seeds):
        applied = ale_random.applied_actions(int(s), np.repeat(asked[:, j], frameskip), STICKY)
        alive = env.steps[j]  # frames after game over are not played
        assert np.array_equal(last[:alive, j], applied[frameskip - 1 :: frameskip][:alive])
    alone = ShadowBreakout(1, params, seeds=seeds[-1:])
    alone.reset()
    for t in range(steps):
        alone.step(asked[t, -1:])
    assert np.array_equal(alone._mt[0], env._mt[-1]) and alone._rng[0] == env._rng[-1]


def test_the_shadow_paddle_follows_ale_on_the_same_seed():
    """Default protocol, no serve: atari-cal's paddle is frame-exact given the applied actions, so with ALE's stream
    the shadow paddle equals ALE's at every agent step of the same seed; with its own stream it does not."""
    steps = 300
    moves = np.array([NOOP, RIGHT, LEFT])
    for seed in SEEDS:
        asked = moves[np.random.default_rng(seed).integers(0, 3, size=steps)]
        ale = AleBreakout(Protocol(), seed)
        ale.reset()
        ale_x = [ale.step(a)[0][F["paddle_x"]] for a in asked]
        for rng, same in (("ale", True), ("splitmix", False)):
            shadow = ShadowBreakout(1, load_preset("atari-cal", rng=rng), seeds=[seed])
            shadow.reset()
            x = [shadow.step(np.array([a]))[0][0, F["paddle_x"]] for a in asked]
            assert np.array_equal(x, ale_x) == same, (seed, rng)


def test_rng_field_keeps_old_digests_and_needs_frame_serves():
    cal = load_preset("atari-cal")
    assert cal.rng == "splitmix" and "rng" not in cal.physics()
    assert load_preset("atari-cal", rng="ale").digest() != cal.digest()
    with pytest.raises(BadInput) as err:
        load_preset("atari", rng="ale")  # random serves: ALE's stream has no draws for them
    assert err.value.field == "preset"


def test_the_fused_loop_carries_the_stream():
    """`shadow_loop.play` finds the stream's state by the kernel's argument names: its episodes with `rng: ale` equal
    the Python loop's, byte for byte, and differ from the splitmix stream's."""
    from policylab.fileio import arrays_to_bytes
    from policylab.policies.breakout import V3_DEFAULTS
    from policylab.studies.breakout.episodes.runner import EpisodeTask, run_shadow_group

    def episodes(rng, fused):
        task = EpisodeTask(
            "shadow",
            tuple(SEEDS),
            "breakout_policy_v3",
            dict(V3_DEFAULTS),
            Protocol(max_steps=200).model_dump(),
            load_preset("atari-cal", rng=rng),
            "atari-cal",
        )
        return [arrays_to_bytes(ep.payload) for ep in run_shadow_group([task], fused=fused)[0]]

    assert episodes("ale", True) == episodes("ale", False) != episodes("splitmix", True)
