"""A learned policy is a file every Breakout command takes: an MLP trained (here: initialised) in torch,
exported to ONNX, played by `breakout eval`, `audit` and `train --baseline` on real ALE and on the
shadow, acting as torch does, keyed by its content, and refused in one line when the file is bad."""

from __future__ import annotations

import copy
import json
import shutil
import sqlite3

import numpy as np
import pytest
import torch

from policylab.cli import invoke
from policylab.envs.breakout.params import load_preset
from policylab.envs.breakout.rom.kernel import brick_flags
from policylab.policies.breakout_net import FEATURE_SCALE, NetObserver, NetObsSpec, read, stamp
from policylab.rollout.store import Store
from policylab.studies.breakout.episodes.runner import EpisodeTask, run_shadow_group
from tests.support.breakout_nets import export, torch_mlp

STEPS = "200"  # agent steps per episode: enough for serves, bounces and bricks, small enough for tests


@pytest.fixture(scope="module")
def nets(tmp_path_factory):
    """Two networks: history 2 with the wall (the learner's kind) and history 1 without it."""
    root = tmp_path_factory.mktemp("nets")
    out = {}
    for name, spec, seed in (("wall", NetObsSpec(history=2, wall=True), 0), ("plain", NetObsSpec(1, False), 1)):
        net = torch_mlp(spec, seed)
        export(net, spec, root / f"{name}.onnx")
        out[name] = (root / f"{name}.onnx", net, spec)
    return out


def cli(*args) -> int:
    return invoke(["breakout", *map(str, args)])


def torch_actions(net: torch.nn.Sequential, obs: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return net(torch.from_numpy(obs)).argmax(dim=1).numpy()


def test_export_round_trip_acts_as_torch(nets, tmp_path):
    path, net, spec = nets["wall"]
    f = read(path)
    assert f.spec == spec and f.name == "wall.onnx" and len(f.sha256) == 64
    assert f.record == {"format": "onnx", "sha256": f.sha256, "observation": {"history": 2, "wall": True}}
    export(net, spec, tmp_path / "again.onnx")
    assert (tmp_path / "again.onnx").read_bytes() == path.read_bytes(), "the bytes depend on the weights only"
    rng = np.random.default_rng(0)
    obs = np.concatenate([rng.uniform(-1, 1.5, (2000, 18)), rng.integers(0, 2, (2000, 108))], axis=1).astype(np.float32)
    with torch.no_grad():
        logits = net(torch.from_numpy(obs)).numpy()
    policy = f.policy()
    assert policy.mlp is not None, "a file this project writes acts through the CPU-independent kernel"
    exact, bound = float64_logits_and_float32_bound(net, obs)
    assert np.abs(policy.logits(obs) - exact).max() < 1e-12, "the kernel computes the network in float64"
    # torch and onnxruntime compute in float32 with kernels, thread splits and tanh approximations that
    # depend on the CPU and on global state; each stays within the float32 bound of the exact logits
    assert (np.abs(logits - exact) <= bound).all()
    assert (np.abs(policy.network.onnxruntime(obs) - exact) <= bound).all()
    top2 = np.sort(exact, axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 2 * bound.max(axis=1)  # rows whose greedy action float32 cannot flip
    assert clear.mean() > 0.99
    assert (policy.act(obs) == exact.argmax(axis=1)).all()
    assert (logits.argmax(axis=1)[clear] == exact.argmax(axis=1)[clear]).all()
    assert len(set(policy.act(obs).tolist())) >= 3, "the test network uses several actions"


def float64_logits_and_float32_bound(net: torch.nn.Sequential, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The network's logits in float64 (float32 weights and inputs are exact in float64), and a bound on
    how far any float32 evaluation may be from them: per layer, a sum of n products in any order is
    within gamma(n + 1) = (n + 1) u / (1 - (n + 1) u) of (|W| |x| + |b|) (Higham, Accuracy and Stability,
    3.5), plus the earlier layers' error through |W| (tanh is 1-Lipschitz), plus 8 ulp of 1 for a
    float32 tanh approximation; u = 2**-24."""
    u = 2.0**-24
    x, err = obs.astype(np.float64), np.zeros(obs.shape)
    layers = [m for m in net if isinstance(m, torch.nn.Linear)]
    for i, m in enumerate(layers):
        w = m.weight.detach().numpy().astype(np.float64)
        b = m.bias.detach().numpy().astype(np.float64)
        n = w.shape[1] + 1
        gamma = n * u / (1 - n * u)
        y = np.einsum("ni,oi->no", x, w) + b
        err = np.einsum("ni,oi->no", err, np.abs(w)) + gamma * (
            np.einsum("ni,oi->no", np.abs(x), np.abs(w)) + np.abs(b)
        )
        if i < len(layers) - 1:
            y, err = np.tanh(y), err + 8 * u
        x = y
    return x, err


def test_eval_on_both_envs_acts_as_torch_and_is_deterministic(nets, tmp_path):
    """Every recorded policy action equals torch's greedy action on the observation rebuilt from the
    record (features from the payload; on ALE the wall from the recorded RAM); a second run into a
    new folder writes the same report bytes."""
    path, net, spec = nets["wall"]
    for env, episodes in (("ale", 2), ("shadow", 3)):
        outs = [tmp_path / f"{env}-{i}" for i in range(2)]
        for out in outs:
            assert (
                cli("eval", "--env", env, "--policy", path, "--episodes", episodes, "--max-steps", STEPS, "--out", out)
                == 0
            )
        a, b = ((o / "report.json").read_bytes() for o in outs)
        assert a == b
        report = json.loads(a)
        assert report["objective"]["policy"] == "wall.onnx" and report["objective"]["params"] == {}
        assert report["objective"]["network"] == read(path).record
        assert "<title>wall.onnx on " in (outs[0] / "report.html").read_text()
        with Store(outs[0] / "store") as store:
            for row in report["episodes"]:
                rec = store.get(row["key"])
                assert rec.data["policy"] == {"network": read(path).record}
                if env != "ale":
                    continue
                arrays = store.payload(row["key"])
                walls = brick_flags(arrays["ram"]).reshape(len(arrays["ram"]), -1)
                obs_rows = NetObserver(spec, 1)
                feats = arrays["obs"].astype(np.float32)
                built = [obs_rows.reset(feats[:1], walls[:1])] + [
                    obs_rows.observe(feats[t : t + 1], walls[t : t + 1]) for t in range(1, len(feats) - 1)
                ]
                acts = torch_actions(net, np.concatenate(built))
                assert (acts == arrays["policy_action"]).all()


def test_shadow_actions_are_torchs_and_batch_invariant(nets):
    """The shadow's stored policy actions are torch's on the features (a network without the wall,
    so the record alone rebuilds its observation); an episode is the same bytes alone or in a batch."""
    path, net, spec = nets["plain"]
    f = read(path)
    protocol = {"frameskip": 4, "sticky": 0.25, "action_set": "minimal", "max_steps": int(STEPS), "serve": "auto"}
    shadow = load_preset("atari-cal")

    def task(seeds):
        return EpisodeTask("shadow", seeds, f.name, {}, protocol, shadow, "atari-cal", network=f)

    batch = run_shadow_group([task((5, 6, 7))])[0]
    alone = run_shadow_group([task((6,))])[0][0]
    for k in alone.payload:
        assert alone.payload[k].tobytes() == batch[1].payload[k].tobytes()
    for ep in batch:
        feats = ep.payload["obs"][:-1] * FEATURE_SCALE
        assert (torch_actions(net, feats.astype(np.float32)) == ep.payload["policy_action"]).all()
    assert len(set(np.concatenate([e.payload["policy_action"] for e in batch]).tolist())) >= 2


def _store_rows(store) -> int:
    with sqlite3.connect(store / "index.sqlite") as db:
        return db.execute("select count(*) from rollouts").fetchone()[0]


def test_store_keys_are_the_content_not_the_path(nets, tmp_path):
    path, net, spec = nets["plain"]
    store = tmp_path / "store"
    args = ("--env", "shadow", "--episodes", "2", "--max-steps", "50", "--store", store)
    assert cli("eval", "--policy", path, *args, "--out", tmp_path / "a") == 0
    assert _store_rows(store) == 2
    moved = tmp_path / "elsewhere" / "renamed.onnx"
    moved.parent.mkdir()
    shutil.copy(path, moved)
    assert cli("eval", "--policy", moved, *args, "--out", tmp_path / "b") == 0
    assert _store_rows(store) == 2, "a moved, renamed file is the same policy: nothing re-runs"
    a, b = (json.loads((tmp_path / o / "report.json").read_text()) for o in ("a", "b"))
    assert [r["key"] for r in a["episodes"]] == [r["key"] for r in b["episodes"]]
    assert b["objective"]["policy"] == "renamed.onnx"
    edited = copy.deepcopy(net)  # the fixture's net stays as its file
    with torch.no_grad():
        edited[0].bias.add_(0.5)
    export(edited, spec, moved)
    assert cli("eval", "--policy", moved, *args, "--out", tmp_path / "c") == 0
    assert _store_rows(store) == 4, "a changed file is another policy: its episodes run"


def _bad_files(tmp_path, nets):
    import onnx

    path, _, _ = nets["plain"]
    (tmp_path / "corrupt.onnx").write_bytes(b"\x00\xffnot a protobuf")
    wide = torch_mlp(NetObsSpec(2, True), 3)
    export(wide, NetObsSpec(2, True), tmp_path / "lying.onnx")  # input of 126 values ...
    model = onnx.load(tmp_path / "lying.onnx")
    del model.metadata_props[:]
    stamp(model, NetObsSpec(1, False))  # ... metadata says 9
    onnx.save(model, tmp_path / "wrong_size.onnx")
    del model.metadata_props[:]
    onnx.save(model, tmp_path / "no_metadata.onnx")
    return {
        "missing": tmp_path / "missing.onnx",
        "corrupt": tmp_path / "corrupt.onnx",
        "wrong size": tmp_path / "wrong_size.onnx",
        "no metadata": tmp_path / "no_metadata.onnx",
        "not onnx": path.with_suffix(".json"),
    }


@pytest.mark.parametrize("case", ["missing", "corrupt", "wrong size", "no metadata", "not onnx"])
@pytest.mark.parametrize("command", ["eval", "audit", "train"])
def test_a_bad_file_is_one_line_exit_2_nothing_written(nets, tmp_path, capsys, case, command):
    bad = _bad_files(tmp_path, nets)[case]
    out = tmp_path / "out"
    argv = {
        "eval": ["eval", "--env", "ale", "--policy", bad, "--episodes", "1"],
        "audit": ["audit", "--policy", bad, "--episodes", "1"],
        "train": ["train", "--baseline", bad],
    }[command]
    assert cli(*argv, "--out", out) == 2
    err = capsys.readouterr().err.strip().splitlines()
    field = "baseline" if command == "train" else "policy"
    assert len(err) == 1 and err[0].startswith(f"policylab: error: {field}: "), err
    assert not out.exists()


def test_a_network_takes_no_params_or_candidates(nets, tmp_path, capsys):
    path, _, _ = nets["plain"]
    params = tmp_path / "p.json"
    params.write_text("{}")
    assert (
        cli(
            "eval", "--env", "shadow", "--policy", path, "--params", params, "--episodes", "1", "--out", tmp_path / "o1"
        )
        == 2
    )
    assert cli("audit", "--policy", path, "--candidates", params, "--episodes", "1", "--out", tmp_path / "o2") == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].startswith("policylab: error: params: ") and lines[1].startswith("policylab: error: candidates: ")
    assert not (tmp_path / "o1").exists() and not (tmp_path / "o2").exists()


def test_audit_and_train_baseline_take_a_file(nets, tmp_path):
    path, _, _ = nets["wall"]
    assert cli("audit", "--policy", path, "--episodes", "2", "--max-steps", STEPS, "--out", tmp_path / "audit") == 0
    audit = json.loads((tmp_path / "audit" / "audit.json").read_text())
    assert audit["objective"]["policy"] == "wall.onnx" and audit["objective"]["network"] == read(path).record
    assert [r["seed"] for r in audit["comparison"]["paired_by_seed"]] == [0, 1]
    assert (
        cli(
            "train",
            "--baseline",
            path,
            "--search-seeds",
            "1",
            "--rounds",
            "1",
            "--validate-episodes",
            "2",
            "--exact-episodes",
            "0",
            "--max-steps",
            STEPS,
            "--no-video",
            "--out",
            tmp_path / "train",
        )
        == 0
    )
    train = json.loads((tmp_path / "train" / "report.json").read_text())
    assert train["objective"]["baseline"] == "wall.onnx"
    assert train["objective"]["baseline_network"] == read(path).record
    with Store(tmp_path / "train" / "store") as store:
        # the baseline's validation episodes are the network's ALE records, the same keys an eval makes
        assert (
            cli(
                "eval",
                "--env",
                "ale",
                "--policy",
                path,
                "--episodes",
                "2",
                "--seed",
                "10000",
                "--max-steps",
                STEPS,
                "--store",
                tmp_path / "train" / "store",
                "--out",
                tmp_path / "eval",
            )
            == 0
        )
        ev = json.loads((tmp_path / "eval" / "report.json").read_text())
        assert [r["score"] for r in ev["episodes"]] == train["evaluation"]["baseline_policy"]["scores"]
        assert all(store.get(r["key"]) is not None for r in ev["episodes"])


def test_worker_processes_play_the_same_episodes(nets, tmp_path):
    """Tasks carry the network's bytes to worker processes (the same pickling for ALE and shadow
    units); shadow batches split over units give the files the local executor writes."""
    from policylab.studies.breakout.sizes import SHADOW_BATCH

    path, _, _ = nets["wall"]
    for executor in ("local", "processes"):
        assert (
            cli(
                "eval",
                "--env",
                "shadow",
                "--policy",
                path,
                "--episodes",
                SHADOW_BATCH + 4,
                "--max-steps",
                "60",
                "--executor",
                executor,
                "--out",
                tmp_path / executor,
            )
            == 0
        )
    a, b = ((tmp_path / x / "episodes.jsonl").read_bytes() for x in ("local", "processes"))
    assert a == b


def test_a_network_exported_elsewhere_runs_the_same_way(nets, tmp_path):
    """torch's own (TorchScript) exporter plus `stamp` makes a file that plays as ours does: other
    bytes (another store key), the same actions on every step."""
    import io

    import onnx

    path, net, spec = nets["plain"]
    buf = io.BytesIO()
    with pytest.warns(DeprecationWarning):  # torch 2.13 keeps the TorchScript exporter behind dynamo=False
        torch.onnx.export(
            net,
            (torch.zeros(1, spec.dim),),
            buf,
            dynamo=False,
            input_names=["x"],
            output_names=["y"],
            dynamic_axes={"x": {0: "n"}, "y": {0: "n"}},
        )
    model = onnx.load_from_string(buf.getvalue())
    stamp(model, spec)
    onnx.save(model, tmp_path / "torch_export.onnx")
    assert read(tmp_path / "torch_export.onnx").sha256 != read(path).sha256
    for name, file in (("ours", path), ("theirs", tmp_path / "torch_export.onnx")):
        assert (
            cli(
                "eval",
                "--env",
                "shadow",
                "--policy",
                file,
                "--episodes",
                "3",
                "--max-steps",
                STEPS,
                "--replays",
                "3",
                "--out",
                tmp_path / name,
            )
            == 0
        )
    for i, seed in enumerate((0, 1, 2)):
        name = f"ep{i:03d}_seed{seed}.jsonl"
        ours, theirs = (tmp_path / n / "replays" / name for n in ("ours", "theirs"))
        assert ours.read_text() == theirs.read_text()


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_export_onnx_activations_match_torch(activation, tmp_path):
    from policylab.policies.breakout_net import export_onnx

    spec = NetObsSpec(history=1, wall=True)
    act = torch.nn.Tanh() if activation == "tanh" else torch.nn.ReLU()
    torch.manual_seed(5)
    net = torch.nn.Sequential(torch.nn.Linear(spec.dim, 16), act, torch.nn.Linear(16, 4))
    export_onnx(
        [(m.weight.detach().numpy(), m.bias.detach().numpy()) for m in net if isinstance(m, torch.nn.Linear)],
        spec,
        tmp_path / "n.onnx",
        activation=activation,
    )
    obs = np.random.default_rng(1).uniform(-1, 1, (500, spec.dim)).astype(np.float32)
    with torch.no_grad():
        logits = net(torch.from_numpy(obs)).numpy()
    assert np.abs(read(tmp_path / "n.onnx").policy().network.onnxruntime(obs) - logits).max() < 1e-5


def test_on_the_rom_exact_shadow_a_network_plays_ales_episodes(tmp_path):
    """The observation is the same on both envs, wall included: on the `ale-exact` preset (the cartridge's
    frame logic and ALE's sticky stream) a network whose actions depend on the wall plays the same
    episodes as on ALE, step for step (replays byte-identical) while bricks break."""
    spec = NetObsSpec(history=1, wall=True)
    net = torch_mlp(spec, 0, hidden=64)
    export(net, spec, tmp_path / "net.onnx")
    for env in ("ale", "shadow"):
        assert (
            cli(
                "eval",
                "--env",
                env,
                "--preset",
                "ale-exact",
                "--policy",
                tmp_path / "net.onnx",
                "--episodes",
                "2",
                "--replays",
                "2",
                "--out",
                tmp_path / env,
            )
            == 0
        )
    ale = json.loads((tmp_path / "ale" / "report.json").read_text())
    assert min(ale["distribution"]["scores"]) >= 5, "bricks break, so the wall changes during the episodes"
    for row in ale["episodes"]:
        name = f"ep{row['episode']:03d}_seed{row['seed']}.jsonl"
        ale_replay, shadow_replay = (tmp_path / env / "replays" / name for env in ("ale", "shadow"))
        assert ale_replay.read_bytes() == shadow_replay.read_bytes()
    with Store(tmp_path / "ale" / "store") as store:
        arrays = store.payload(ale["episodes"][0]["key"])
    feats = arrays["obs"][:-1].astype(np.float32) * FEATURE_SCALE
    walls = brick_flags(arrays["ram"][:-1]).reshape(len(arrays["ram"]) - 1, -1).astype(np.float32)
    with_wall = torch_actions(net, np.concatenate([feats, walls], axis=1))
    assert (with_wall == arrays["policy_action"]).all()
    assert (with_wall != torch_actions(net, np.concatenate([feats, 1 - walls], axis=1))).any(), (
        "the network's actions depend on the wall"
    )
