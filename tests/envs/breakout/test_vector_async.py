"""The vector env's async batches and autoreset modes against ale-py's `AtariVectorEnv`, side by side on fresh
seeds: `send`/`recv` with `batch_size` < `num_envs` (ale-py with one worker thread, whose batch order is its
queue's: byte for byte, `env_id` included; with several threads each env's own sequence), SameStep's reset
observation and `final_obs`, Disabled against ale-py's NextStep with the same partial resets, and the `ale`
calls and `map_action_idx`."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from policylab.envs.breakout.vector import BreakoutVectorEnv
from policylab.errors import BadInput

ale_py = pytest.importorskip("ale_py")
SEED = 9_140_000  # the breakout "vector" range (policylab.rollout.seeds), past what test_vector.py uses


def _assert_same(ra, rb, where: str) -> None:
    names = ("obs", "reward", "terminated", "truncated")
    for name, x, y in zip(names, ra[:4], rb[:4]):
        assert y.dtype == x.dtype and y.shape == x.shape, (where, name, y.dtype, x.dtype, y.shape, x.shape)
        np.testing.assert_array_equal(y, x, err_msg=f"{where}: {name}")
    ia, ib = ra[4], rb[4]
    assert ia.keys() == ib.keys(), (where, ia.keys(), ib.keys())
    done = ra[2] | ra[3]
    for k in ia:
        if k == "final_obs":  # ale-py leaves the rows whose episode did not end unwritten
            np.testing.assert_array_equal(ib[k][done], ia[k][done], err_msg=f"{where}: final_obs")
        else:
            np.testing.assert_array_equal(ib[k], ia[k], err_msg=f"{where}: info {k}")


def _actions(rng, n: int, continuous: bool) -> np.ndarray:
    if continuous:
        return rng.uniform([0, -np.pi, 0], [1, np.pi, 1], (n, 3)).astype(np.float32)
    return rng.integers(0, 4, n)


@pytest.mark.parametrize(
    "n, batch, kwargs",
    [
        (5, 2, dict(noop_max=30, repeat_action_probability=0.25, max_num_frames_per_episode=240)),
        (4, 3, dict(noop_max=0, max_num_frames_per_episode=400, autoreset_mode="SameStep")),
        (3, 1, dict(noop_max=5, episodic_life=True, continuous=True, max_num_frames_per_episode=200)),
    ],
)
def test_async_batches_equal_ale_pys_with_one_worker_byte_for_byte(n, batch, kwargs):
    """ale-py with num_threads=1 works its queue in order: every batch (env ids, observations, rewards, ends,
    info) equals ours, through episode ends and autoresets. (A reset in the middle of async batches queues an
    env a second time, and ale-py's env then plays the seed or action its worker finds set when it gets there, a
    race of its timing: fresh envs per seed here.)"""
    rng = np.random.default_rng(SEED)
    ends = 0
    for round_, seed in enumerate((SEED, SEED + 100)):
        ale = ale_py.AtariVectorEnv("breakout", num_envs=n, batch_size=batch, num_threads=1, **kwargs)
        ours = BreakoutVectorEnv(n, batch_size=batch, **kwargs)
        assert ours.observation_space == ale.observation_space and ours.action_space == ale.action_space
        (oa, ia), (ob, ib) = ale.reset(seed=seed), ours.reset(seed=seed)
        np.testing.assert_array_equal(ob, oa)
        for k in ia:
            np.testing.assert_array_equal(ib[k], ia[k], err_msg=f"reset info {k}")
        for t in range(250):
            a = _actions(rng, batch, ours.continuous)
            ra, rb = ale.step(a), ours.step(a)
            _assert_same(ra, rb, f"round {round_} step {t}")
            ends += int((ra[2] | ra[3]).sum())
        ale.close()
    assert ends >= 2


def test_async_batches_give_each_env_ale_pys_sequence_with_several_workers():
    """With 3 worker threads ale-py's batches come in the order envs finish; each env's own sequence of
    (observation, reward, terminated, truncated, lives, frame numbers) is the same as ours. Which envs a
    batch holds depends on ale-py's threads (and so on the machine's load): each run goes on until every
    env has at least ENTRIES entries, so a loaded machine lengthens the run instead of thinning an env's."""
    n, batch, kwargs = 6, 3, dict(noop_max=30, repeat_action_probability=0.25)
    entries = 40
    runs = []
    for env in (
        ale_py.AtariVectorEnv("breakout", num_envs=n, batch_size=batch, num_threads=3, **kwargs),
        BreakoutVectorEnv(n, batch_size=batch, **kwargs),
    ):
        seqs = {i: [] for i in range(n)}
        rngs = [np.random.default_rng(SEED + 10 + i) for i in range(n)]  # each env's actions from its own stream
        obs, info = env.reset(seed=SEED + 10)
        rew = term = trunc = np.zeros(batch, dtype=np.int64)
        for _ in range(2000):  # a bound that only a starved env would reach (120 steps give each about 60)
            if min(len(q) for q in seqs.values()) >= entries:
                break
            # an env's entry is the same whichever call returned it: ale-py's threads may hand an env's reset to a
            # later step's batch (a reset's reward and ends are zero)
            ids = info["env_id"]
            for k, i in enumerate(ids):
                seqs[int(i)].append(
                    (
                        obs[k].tobytes(),
                        int(rew[k]),
                        bool(term[k]),
                        bool(trunc[k]),
                        int(info["lives"][k]),
                        int(info["episode_frame_number"][k]),
                    )
                )
            obs, rew, term, trunc, info = env.step(np.array([rngs[i].integers(0, 4) for i in ids]))
        runs.append(seqs)
        env.close()
    for i in range(n):
        common = min(len(runs[0][i]), len(runs[1][i]))
        assert common >= entries and runs[0][i][:common] == runs[1][i][:common], i


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(noop_max=30, max_num_frames_per_episode=300),
        dict(noop_max=0, episodic_life=True, repeat_action_probability=0.25, grayscale=False),
    ],
)
def test_same_step_autoreset_equals_ale_pys(kwargs):
    """SameStep: the ending step returns the reset's observation and info with the episode's reward and ends,
    and the episode's last stack in info["final_obs"] (present when a row ended)."""
    ale = ale_py.AtariVectorEnv("breakout", num_envs=4, autoreset_mode="SameStep", **kwargs)
    ours = BreakoutVectorEnv(4, autoreset_mode="SameStep", **kwargs)
    assert ours.metadata["autoreset_mode"] == ale.metadata["autoreset_mode"]
    (oa, _), (ob, _) = ale.reset(seed=SEED + 20), ours.reset(seed=SEED + 20)
    np.testing.assert_array_equal(ob, oa)
    rng = np.random.default_rng(SEED + 20)
    finals = 0
    for t in range(300):
        a = rng.integers(0, 4, 4)
        ra, rb = ale.step(a), ours.step(a)
        _assert_same(ra, rb, f"step {t}")
        finals += "final_obs" in ra[4]
    assert finals >= 2
    ale.close()


def test_disabled_autoreset_equals_ale_py_with_the_same_partial_resets():
    """Disabled (ale-py 0.12 has no such mode): nothing resets by itself; resetting the ended envs with
    reset_mask plays as ale-py's NextStep env given the same partial resets; stepping an ended env is refused."""
    kwargs = dict(noop_max=30, repeat_action_probability=0.25, max_num_frames_per_episode=200)
    ale = ale_py.AtariVectorEnv("breakout", num_envs=3, **kwargs)
    ours = BreakoutVectorEnv(3, autoreset_mode="Disabled", **kwargs)
    (oa, _), (ob, _) = ale.reset(seed=SEED + 30), ours.reset(seed=SEED + 30)
    np.testing.assert_array_equal(ob, oa)
    rng = np.random.default_rng(SEED + 30)
    resets = 0
    for t in range(200):
        a = rng.integers(0, 4, 3)
        ra, rb = ale.step(a), ours.step(a)
        _assert_same(ra, rb, f"step {t}")
        done = ra[2] | ra[3]
        if done.any():
            with pytest.raises(gym.error.Error):
                ours.step(a)
            (oa, ia), (ob, ib) = ale.reset(options={"reset_mask": done}), ours.reset(options={"reset_mask": done})
            np.testing.assert_array_equal(ob, oa)
            for k in ia:
                np.testing.assert_array_equal(ib[k], ia[k], err_msg=f"reset after step {t}: info {k}")
            resets += 1
    assert resets >= 2
    ale.close()


def test_the_ale_calls_and_map_action_idx_are_ale_pys():
    ale = ale_py.AtariVectorEnv("breakout", num_envs=2, batch_size=1, num_threads=1, full_action_space=True)
    ours = BreakoutVectorEnv(2, batch_size=1, full_action_space=True)
    np.testing.assert_array_equal(ours.map_action_idx, ale.map_action_idx)
    assert ours.map_action_idx.dtype == ale.map_action_idx.dtype
    assert ours.ale.get_action_set() == ale.ale.get_action_set()
    assert ours.ale.get_num_envs() == ale.ale.get_num_envs()
    assert tuple(ours.ale.get_observation_shape()) == tuple(ale.ale.get_observation_shape())
    ra, rb = ale.ale.reset([0, 1], [SEED + 40, -1]), ours.ale.reset([0, 1], [SEED + 40, -1])
    np.testing.assert_array_equal(rb[1]["env_id"], ra[1]["env_id"])
    np.testing.assert_array_equal(rb[0][rb[1]["env_id"] == 0], ra[0][ra[1]["env_id"] == 0])
    for t in range(40):  # env 0 only is compared: env 1 started from entropy on both
        ids, strengths = np.array([t % 18]), np.array([0.75], dtype=np.float32)
        ale.ale.send(ids, strengths)
        ours.ale.send(ids, strengths)
        xa, xb = ale.ale.recv(), ours.ale.recv()
        np.testing.assert_array_equal(xb[4]["env_id"], xa[4]["env_id"])
        if xa[4]["env_id"][0] == 0:
            _assert_same(xa, xb, f"step {t}")
    ale.close()


def test_async_misuse_is_one_clear_error():
    env = BreakoutVectorEnv(4, batch_size=2)
    with pytest.raises(BadInput):
        env.send(np.zeros(2, dtype=np.int64))  # before a reset
    env.reset(seed=SEED)
    with pytest.raises(BadInput):
        env.reset(options={"reset_mask": np.array([True, False, False, False])})
    with pytest.raises(BadInput):
        env.step(np.zeros(4, dtype=np.int64))  # a batch is 2
    with pytest.raises(gym.error.Error):
        env.xla()
