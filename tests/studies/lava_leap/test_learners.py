"""The learners: a GRPO update against hand-computed numbers, the clip, and the training loop."""

from __future__ import annotations

import numpy as np
import pytest

from policylab.studies.lava_leap import batch, grpo_update, new_floor, play, ppo_update, reinforce_update, train
from policylab.studies.lava_leap.agent import Run

S0, S_LAVA1, S_LAVA3 = [0, 0, 0, 1.0], [1, 0, 0, 1.0], [0, 0, 1, 1.0]


def tiny_group():
    """Run 1: STEP on 000 then LEAP on 100, reward 1.0; run 2: LEAP on 001, reward 0.5."""
    r1 = Run(path=np.array([0, 1, 39]), actions=np.array([0, 1]), states=np.array([S0, S_LAVA1]), reward=1.0)
    r2 = Run(path=np.array([0, 3]), actions=np.array([1]), states=np.array([S_LAVA3]), reward=0.5)
    return [r1, r2]


def test_grpo_single_pass_against_hand_computed_numbers():
    # rewards 1.0, 0.5: mean 0.75, population std 0.25, advantages +-0.25 / (0.25 + 1e-8)
    a = 0.25 / (0.25 + 1e-8)
    trace = []
    W1 = grpo_update(np.zeros((4, 2)), tiny_group(), trace=trace, lr=0.5, eps=0.2, passes=1)
    # pi = (0.5, 0.5) everywhere at W = 0, N = 3 steps; by hand:
    # step 1 (000, STEP, +a): a * outer([0,0,0,1], [+.5, -.5])
    # step 2 (100, LEAP, +a): a * outer([1,0,0,1], [-.5, +.5])
    # step 3 (001, LEAP, -a): -a * outer([0,0,1,1], [-.5, +.5])
    # sum / 3: row0 = a[-1/6, 1/6], row1 = 0, row2 = a[1/6, -1/6], row3 = a[1/6, -1/6]
    grad = a * np.array([[-1 / 6, 1 / 6], [0, 0], [1 / 6, -1 / 6], [1 / 6, -1 / 6]])
    assert np.allclose(trace[0]["grad"], grad, atol=1e-15)
    assert np.allclose(W1, 0.5 * grad, atol=1e-15)
    assert np.allclose(W1[0], [-0.0833333, 0.0833333], atol=1e-7)
    assert (trace[0]["rho"] == 1.0).all() and not trace[0]["clipped"].any()
    assert np.allclose(trace[0]["pi"], 0.5)


def test_grpo_second_pass_uses_ratios_and_trace_is_consistent():
    group = tiny_group()
    trace = []
    W0 = np.zeros((4, 2))
    W2 = grpo_update(W0, group, trace=trace, lr=0.5, eps=0.2, passes=2)
    S, acts, A = batch(group, [1.0, -1.0])
    A = A * (0.25 / (0.25 + 1e-8))
    W1 = W0 + 0.5 * trace[0]["grad"]
    z = S @ W1
    pi = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    rho = pi[np.arange(3), acts] / 0.5
    g = sum(A[j] * rho[j] * np.outer(S[j], np.eye(2)[acts[j]] - pi[j]) for j in range(3)) / 3
    assert np.allclose(trace[1]["W"], W1) and np.allclose(trace[1]["rho"], rho)
    assert np.allclose(W2, W1 + 0.5 * g)
    assert np.allclose(trace[1]["pi"], pi)


def test_clipped_steps_push_nothing():
    group = tiny_group()
    trace = []
    grpo_update(np.zeros((4, 2)), group, trace=trace, lr=8.0, eps=0.2, passes=3)
    S, acts, _ = batch(group, [0, 0])
    A = np.array([1.0, 1.0, -1.0]) * (0.25 / (0.25 + 1e-8))
    engaged = 0
    for p in trace:
        pi, rho, cut = p["pi"], p["rho"], p["clipped"]
        expect_cut = ((A > 0) & (rho > 1.2)) | ((A < 0) & (rho < 0.8))
        assert (cut == expect_cut).all()
        pushes = [A[j] * rho[j] * np.outer(S[j], np.eye(2)[acts[j]] - pi[j]) / 3 for j in range(3)]
        assert np.allclose(p["grad"], sum(pushes[j] for j in range(3) if not cut[j]), atol=1e-15)
        if cut.any():
            engaged += 1
            assert not np.allclose(p["grad"], sum(pushes))  # the clipped push would have mattered
    assert engaged >= 1
    # a step whose ratio left the band against its advantage's direction is not clipped
    last = trace[-1]
    assert not last["clipped"][(A > 0) & (last["rho"] < 0.8)].any()


def test_grpo_does_not_mutate_its_input_and_equal_rewards_do_nothing():
    W = np.arange(8.0).reshape(4, 2) / 10
    keep = W.copy()
    r1, r2 = tiny_group()
    same = [r1, Run(path=r1.path, actions=r1.actions, states=r1.states, reward=r1.reward)]
    assert np.array_equal(grpo_update(W, same), W)
    grpo_update(W, [r1, r2])
    assert np.array_equal(W, keep)


def test_ppo_and_reinforce_updates():
    group = tiny_group()
    v = np.array([0.0, 0.0, 0.0, 0.6])
    W1, v1 = ppo_update(np.zeros((4, 2)), v, group, lr=0.5, eps=0.2, passes=1, lr_critic=0.5)
    S, acts, r = batch(group, [1.0, 0.5])
    A = r - S @ v  # 0.4, 0.4, -0.1
    g = sum(A[j] * np.outer(S[j], np.eye(2)[acts[j]] - 0.5) for j in range(3)) / 3
    assert np.allclose(W1, 0.5 * g)
    assert np.allclose(v1, v + 0.5 * (A[:, None] * S).mean(axis=0))
    Wr = reinforce_update(np.zeros((4, 2)), group, lr=0.5)
    g = sum(r[j] * np.outer(S[j], np.eye(2)[acts[j]] - 0.5) for j in range(3)) / 3
    assert np.allclose(Wr, 0.5 * g)


@pytest.mark.parametrize("algo", ["grpo", "ppo", "reinforce"])
def test_training_kernel_equals_the_python_loop(algo):
    """The documented draw order: each update draws its floor, then G plays, from one generator."""
    rounds, G = 6, 8
    floors = [new_floor(np.random.default_rng(2024))]
    _, _, _, saved = train(algo, 3, floors, snapshots=(rounds,), rounds=rounds, eval_every=1, G=G)
    rng = np.random.default_rng(3)
    W, v = np.zeros((4, 2)), np.zeros(4)
    for _ in range(rounds):
        lava = new_floor(rng)
        runs = [play(W, lava, rng) for _ in range(G)]
        if algo == "grpo":
            W = grpo_update(W, runs)
        elif algo == "ppo":
            W, v = ppo_update(W, v, runs)
        else:
            W = reinforce_update(W, runs)
    assert np.allclose(saved[rounds][0], W, atol=1e-12)
    assert np.allclose(saved[rounds][1], v, atol=1e-12)


def test_train_returns_curve_and_clip_log():
    floors = [new_floor(np.random.default_rng(i)) for i in range(5)]
    log = []
    W, v, curve, saved = train("grpo", 0, floors, clip_log=log, snapshots=(10, 20), rounds=30, eval_every=10)
    assert [c[0] for c in curve] == [0, 10, 20, 30]
    assert len(log) == 30 and all(len(u["clipped"]) == 4 for u in log)
    assert set(saved) == {10, 20} and np.array_equal(v, np.zeros(4))
