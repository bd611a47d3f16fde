"""Rollouts of every policy the project ships or trains give the same bytes on any x86-64 CPU.

Each case plays a short rollout and hashes what it computed (actions, the push protocol, the
trajectory); `digests.json` beside this file holds the sha256 committed from the machine the suite
was written on. A machine whose arithmetic differs fails here, naming the rollout. The same cases run
again in a subprocess with numpy's AVX-512 loops and OpenBLAS's AVX-512 kernels disabled
(`NPY_DISABLE_CPU_FEATURES`, `OPENBLAS_CORETYPE`; both are read at import, hence the subprocess), so a
kernel that depends on the vector width fails even on a machine that has AVX-512.

`tests/test_portable_math.py` checks the arithmetic itself (fixed order, no fused multiply-add).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from policylab import portable_math
from policylab.envs.breakout.shadow import ShadowBreakout
from policylab.envs.robots.batch import run_closed_loop
from policylab.envs.robots.robot import robot
from policylab.policies import breakout_net, linear
from policylab.policies.breakout import breakout_policy_planner_v1, breakout_policy_v3
from tests.support.paths import ROOT

DIGESTS = Path(__file__).with_name("digests.json")
NO_AVX512 = {"NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR", "OPENBLAS_CORETYPE": "Haswell"}
CHECKPOINTS = ROOT / "policylab" / "studies" / "boundary" / "checkpoints"


def sha256(*arrays: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def boundary_rollout(checkpoint: str) -> str:
    """Eight worlds over four frictions (one the model's), six pushed at one onset (a batch of headings)."""
    rob = robot(checkpoint.split("_")[0])
    policy = linear.load(CHECKPOINTS / f"{checkpoint}.npz", rob.obs_dim, rob.act_dim)
    n = 8
    r = run_closed_loop(
        rob,
        policy.act,
        [0.2, 0.6, 1.0, None] * 2,
        list(range(1_000_000, 1_000_000 + n)),
        n_steps=100,
        force_n=np.linspace(0.0, 140.0, n),
        dir_deg=np.arange(n) * 47.0 - 160.0,
        push_k0=np.array([-1, -1, 30, 30, 30, 30, 30, 30]),
        n_push=10,
    )
    return sha256(r["action"], r["push"], r["qpos"], r["qvel"])


def breakout_rollout(policy, preset: str) -> str:
    env = ShadowBreakout(8, preset, seeds=np.arange(8) + 4242)
    obs = env.reset()
    actions = []
    for _ in range(400):
        a = policy(obs)
        actions.append(a)
        obs = env.step(a)[0]
    return sha256(np.array(actions), env.score)


def fixed_network(activation: str) -> breakout_net.BreakoutNetPolicy:
    """A fixed MLP in the form `breakout learn` writes (weights from a seeded numpy generator)."""
    rng = np.random.default_rng(7)
    spec = breakout_net.NetObsSpec(history=2, wall=True)
    sizes = [spec.dim, 32, 32, breakout_net.N_ACTIONS]
    layers = [(rng.normal(0, 1.5 / np.sqrt(a), (b, a)), rng.normal(0, 0.3, b)) for a, b in zip(sizes, sizes[1:])]
    raw = breakout_net.mlp_bytes(layers, spec, activation)
    return breakout_net._check(raw, Path(f"{activation}.onnx"), "policy")


def network_rollout(activation: str) -> str:
    policy = fixed_network(activation)
    env = ShadowBreakout(8, "ale-exact", seeds=np.arange(8) + 4242)
    actor = policy.actor(8)
    obs = env.reset()
    actions = []
    for _ in range(400):
        a = actor(obs, env.walls)
        actions.append(a)
        obs = env.step(a)[0]
    probe = np.random.default_rng(3).uniform(-2, 2, (64, policy.spec.dim)).astype(np.float32)
    return sha256(np.array(actions), env.score, policy.logits(probe))


def protocol_arithmetic(name: str) -> str:
    """The heading, push force and observation of 4,000 random states at once (batched as a sweep's
    onset is): many more values than a short rollout meets, so a 1-ulp dependence on the CPU shows."""
    rob = robot(name)
    rng = np.random.default_rng(11)
    n = 4000
    qpos = np.tile(rob.nominal_qpos, (n, 1)) + rng.normal(0, 0.3, (n, rob.nq))
    qvel = rng.normal(0, 1.0, (n, rob.nv))
    time = np.round(rng.uniform(0, 20, n) / rob.control_dt) * rob.control_dt
    angle = rob.heading(qpos) + np.deg2rad(rng.integers(0, 72, n) * 5.0)
    push = np.stack([90.0 * portable_math.cos_array(angle), 90.0 * portable_math.sin_array(angle)], axis=1)
    return sha256(angle, push, rob.observe(qpos, qvel, time))


CASES = {
    **{f"protocol_{r}": (protocol_arithmetic, r) for r in ("ant", "go1")},
    **{f"boundary_{c}": (boundary_rollout, c) for c in ("ant_v0", "ant_v1", "go1_v0", "go1_v1")},
    "breakout_v3_ale-exact": (breakout_rollout, breakout_policy_v3, "ale-exact"),
    "breakout_v3_atari-cal": (breakout_rollout, breakout_policy_v3, "atari-cal"),
    "breakout_planner_v1_ale-exact": (breakout_rollout, breakout_policy_planner_v1, "ale-exact"),
    "breakout_net_tanh": (network_rollout, "tanh"),
    "breakout_net_relu": (network_rollout, "relu"),
}


def enabled_cpu_features() -> str:
    from numpy._core._multiarray_umath import __cpu_features__

    return " ".join(k for k in ("AVX512F", "AVX512_SKX", "AVX2", "FMA3") if __cpu_features__.get(k))


@pytest.mark.parametrize("case", sorted(CASES))
def test_digest(case: str) -> None:
    fn, *args = CASES[case]
    got = fn(*args)
    want = json.loads(DIGESTS.read_text())[case]
    assert got == want, (
        f"the rollout {case!r} gives different bytes on this machine (sha256 {got[:16]}..., committed "
        f"{want[:16]}...; numpy CPU features enabled here: {enabled_cpu_features() or 'none of AVX512F, AVX2, FMA3'}, "
        f"NPY_DISABLE_CPU_FEATURES={os.environ.get('NPY_DISABLE_CPU_FEATURES', '')!r}): a shipped policy's rollout "
        "depends on this CPU; see docs/design.md, 'Same bytes on any x86-64 CPU'"
    )


def test_digests_hold_without_avx512_kernels() -> None:
    """The digest cases in a child whose numpy and OpenBLAS run without their AVX-512 kernels. On a CPU
    without AVX-512 the variables change nothing and this repeats the cases."""
    env = {**os.environ, **NO_AVX512}
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import numpy as np; print(np.lib.introspect.opt_func_info("
            "func_name='arctan2', signature='float64.*')['arctan2']['ddd']['current'])",
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    assert "X86_V4" not in probe.stdout and "AVX512" not in probe.stdout, "numpy still runs its AVX-512 arctan2"
    child = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            f"{Path(__file__).relative_to(ROOT)}",
            "-k",
            "test_digest and not without",
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
    )
    assert child.returncode == 0, f"with {NO_AVX512}:\n{child.stdout[-4000:]}{child.stderr[-2000:]}"
