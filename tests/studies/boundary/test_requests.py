"""The boundary commands' front door: request models with bounds on every number, light `--help`, and
bad input (checkpoints, stores, analysis folders, grids, out folders) refused in one line naming the
field, exit status 2, before any store or folder is created; the small commands run end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing

import pytest
from pydantic import BaseModel

from policylab.envs.robots.robot import robot
from policylab.policies import linear
from policylab.rollout.executors import EXECUTORS
from policylab.rollout.options import Executor
from policylab.rollout.store import Store
from policylab.studies.boundary import protocol, requests, sweep
from policylab.studies.boundary.checkpoint import resolve_checkpoint
from policylab.studies.boundary.robot_policies import train_configs
from tests.support.bad_policy_files import write_bad_policy_files
from tests.support.boundary_fixtures import cli

MODELS = [
    m
    for m in vars(requests).values()
    if isinstance(m, type) and issubclass(m, requests.Request) and m is not requests.Request
]
COMMANDS = [
    "robot",
    "train",
    "learn",
    "calibrate",
    "sweep",
    "search",
    "verify",
    "reduce",
    "select",
    "replay",
    "clips",
    "rrd",
    "diff",
    "report",
    "probe",
]


def _bad(args, field, tmp_path, contains=""):
    """Run `policylab boundary ARGS`: exit 2, one stderr line naming `field`, nothing new in tmp_path."""
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    r = cli(*args)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"policylab: error: {field}: "), r.stderr
    assert contains in lines[0], lines[0]
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing written
    return lines[0]


# -- the models ---------------------------------------------------------------------------------
def test_one_model_per_command():
    from policylab.cli.boundary import app

    assert [c.name for c in app.registered_commands] == COMMANDS
    assert len(MODELS) == len(COMMANDS)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_number_has_both_bounds_and_every_choice_is_a_literal(model: type[BaseModel]):
    for name, f in model.model_fields.items():
        kinds = {a for a in (typing.get_args(f.annotation) or (f.annotation,)) if a is not type(None)}
        if kinds & {int, float}:
            lower = [m for m in f.metadata if getattr(m, "ge", None) is not None or getattr(m, "gt", None) is not None]
            upper = [m for m in f.metadata if getattr(m, "le", None) is not None or getattr(m, "lt", None) is not None]
            assert lower and upper, f"{model.__name__}.{name} needs a lower and an upper bound"
        assert f.description, f"{model.__name__}.{name} has no help"


def test_choices_match_the_code_that_uses_them():
    train_help = " ".join(requests.TrainRequest.model_fields["config"].description.split())
    assert all(f"{name} (" in train_help for name in train_configs())  # every shipped folder's config, and its words
    assert set(typing.get_args(Executor)) == set(EXECUTORS)
    assert "ray_address" in requests.SweepRequest.model_fields  # every --executor command takes --ray-address


def test_the_bare_sweep_says_where_it_writes():
    """Its help gave no folder: a bare `policylab boundary sweep` wrote ./runs unannounced. The folders it names
    are the defaults a request without options gets."""
    from policylab.studies.boundary.robot_policies import DEFAULT_CHECKPOINT

    bare = requests.SweepRequest()
    doc = " ".join(requests.SweepRequest.__doc__.split())
    assert f"{DEFAULT_CHECKPOINT} over" in doc
    store, out = (os.path.relpath(p) for p in (bare.store, bare.out))  # the out default is resolved from the store
    assert f"./{store} and" in doc and f"./{out} " in doc


def test_help_loads_no_simulator():
    """The boundary group alone (the other studies' groups are theirs to keep light)."""
    code = (
        "import sys; from policylab.cli.boundary import app\n"
        f"for c in {COMMANDS!r}: app([c, '--help'], prog_name='policylab boundary', standalone_mode=False)\n"
        "heavy = {'mujoco', 'gymnasium', 'scipy', 'matplotlib', 'rerun'} & set(sys.modules)\n"
        "assert not heavy, heavy"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"}
    )
    assert r.returncode == 0, r.stderr
    assert "--mu-min" in r.stdout and "[>= 0.05, <= 2.0]" in r.stdout


# -- checkpoints: refused before any store or folder exists ---------------------------------------
@pytest.fixture(scope="module")
def bad_checkpoints(tmp_path_factory):
    """name -> (path, words in the error line)."""
    return write_bad_policy_files(tmp_path_factory.mktemp("bad_checkpoints"))


CASES = [
    "text",
    "npy",
    "truncated",
    "corrupt",
    "garbage",
    "narrow",
    "biped",
    "nan",
    "zero_std",
    "no_std",
    "not_npz_suffix",
    "unknown_name",
    "missing_file",
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("command", ["sweep", "calibrate", "verify"])
def test_bad_checkpoint_is_refused_before_anything_is_written(tmp_path, bad_checkpoints, case, command):
    path, words = bad_checkpoints[case]
    store = tmp_path / "store"
    if command == "verify":  # verify reads a store (a missing one is refused first, as --store): an empty one
        Store(store).close()
    args = {
        "sweep": ["--store", store, "--out", tmp_path / "out"],
        "calibrate": ["--out", tmp_path / "out"],
        "verify": ["--store", store, "--out", tmp_path / "out"],
    }[command]
    _bad([command, "--robot", "ant", "--checkpoint", path, *args], "checkpoint", tmp_path, words)
    assert (command == "verify") == store.exists() and not (tmp_path / "out").exists()


def test_bad_checkpoint_default_out_is_not_created(tmp_path, bad_checkpoints, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default --out (runs/boundary/sweep-<name>) is relative
    _bad(
        ["sweep", "--robot", "ant", "--checkpoint", bad_checkpoints["narrow"][0], "--store", tmp_path / "store"],
        "checkpoint",
        tmp_path,
    )
    _bad(["sweep", "--checkpoint", bad_checkpoints["narrow"][0], "--store", tmp_path / "store"], "robot", tmp_path)
    assert not (tmp_path / "runs").exists()


# -- stores, analysis folders, out folders -----------------------------------------------------
def test_a_folder_that_is_not_a_store(tmp_path):
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "notes.txt").write_text("x")
    _bad(["sweep", "--store", junk, "--out", tmp_path / "o"], "store", tmp_path, "neither a store")
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "index.sqlite").write_text("not sqlite at all, just text that is long enough" * 4)
    _bad(["verify", "--store", fake, "--out", tmp_path / "o"], "store", tmp_path, "is not a store index")
    _bad(
        ["reduce", "--store", tmp_path / "nowhere", "--checkpoint", "ant_v0", "--out", tmp_path / "o"],
        "store",
        tmp_path,
        "no store at",
    )
    _bad(["diff", "--store", fake, "--a", "x", "--b", "y", "--out", tmp_path / "o"], "store", tmp_path)
    (tmp_path / "file").write_text("x")
    _bad(["sweep", "--store", tmp_path / "file", "--out", tmp_path / "o"], "store", tmp_path)


def test_checking_a_store_leaves_it_as_it_was(tmp_path, small_sweep):
    store_root, _ = small_sweep
    before = sorted(p.name for p in store_root.iterdir())
    _bad(["diff", "--store", store_root, "--a", "ant_v0", "--b", "x", "--out", "/proc/policylab/x"], "out", tmp_path)
    assert sorted(p.name for p in store_root.iterdir()) == before  # no -wal/-shm left behind


@pytest.mark.parametrize(
    "command, present, first",
    [
        ("select", [], "reduce"),
        ("replay", [], "reduce"),
        ("replay", ["reduce"], "select"),
        ("clips", ["reduce", "select"], "replay"),
        ("rrd", ["reduce"], "replay"),
        ("report", [], "reduce"),
    ],
)
def test_missing_stage_names_the_command_to_run_first(tmp_path, command, present, first):
    out = tmp_path / "ana"
    files = {"reduce": ["reduce.json", "config.json"], "select": ["select/selection.json"]}
    for stage in present:
        for name in files[stage]:
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).write_text("{}")
    line = _bad([command, "--out", out], "out", tmp_path)
    assert line.endswith(f"not found; run `policylab boundary {first}` first")


def test_out_folder_holding_another_config_is_refused_before_the_store(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "config.json").write_text(json.dumps({"checkpoint": {"name": "ant_v0"}, "grid": "another"}))
    _bad(
        ["sweep", "--store", tmp_path / "store", "--out", out, "--n-mu", "1", "--n-push", "1", "--seeds-per-cell", "1"],
        "out",
        tmp_path,
        "different config",
    )
    assert not (tmp_path / "store").exists()
    _bad(["calibrate", "--out", out], "out", tmp_path, "different config")
    (out / "config.json").unlink()
    (out / "other.txt").write_text("x")
    _bad(["calibrate", "--out", out], "out", tmp_path, "is not empty")


# -- the grid and the sweep's other options -------------------------------------------------------
@pytest.mark.parametrize(
    "args, field",
    [
        (["--mu-min", "0.01"], "mu_min"),
        (["--mu-max", "2.5"], "mu_max"),
        (["--mu-min", "nan"], "mu_min"),
        (["--mu-max", "inf"], "mu_max"),
        (["--mu-min", "0.8", "--mu-max", "0.5"], "mu_max"),
        (["--mu-min", "0.05", "--mu-max", "0.07", "--n-mu", "5"], "n_mu"),  # values collide at 0.01
        (["--mu-min", "0.5", "--mu-max", "0.5", "--n-mu", "3"], "n_mu"),
        (["--n-mu", "197"], "n_mu"),
        (["--push-max", "301"], "push_max"),
        (["--push-min", "ten"], "push_min"),
        (["--push-min", "-5"], "push_min"),
        (["--n-push", "0"], "n_push"),
        (["--seeds-per-cell", "0"], "seeds_per_cell"),
        (
            [
                "--n-mu",
                "196",
                "--mu-max",
                "2.0",
                "--n-push",
                "301",
                "--push-min",
                "0",
                "--push-max",
                "300",
                "--seeds-per-cell",
                "34",
            ],
            "seeds_per_cell",
        ),  # more worlds than the sweep's seed range
        (["--push-dir", "400"], "push_dir"),
        (["--push-t0", "4.5"], "push_t0"),
        (["--executor", "dask"], "executor"),
        (["--ray-address", "127.0.0.1:1"], "ray_address"),
        (["--chunk", "0"], "chunk"),
        (["--chunk", "1.5"], "chunk"),
        (["--threads", "0"], "threads"),
        (["--workers", "100000"], "workers"),
        (["--checkpoint", "ant_v9"], "checkpoint"),
        (["--bogus", "1"], "bogus"),
    ],
)
def test_bad_sweep_options(tmp_path, args, field):
    if field == "bogus":  # an unknown option is a usage error: one line, exit 2
        r = cli("sweep", "--bogus", "1")
        assert r.returncode == 2 and r.stderr.startswith("policylab: error: ") and len(r.stderr.splitlines()) == 1
        return
    _bad(["sweep", "--store", tmp_path / "s", "--out", tmp_path / "o", *args], field, tmp_path)


def test_sweep_needs_are_checked_before_anything_is_written(tmp_path, monkeypatch):
    import policylab.config

    monkeypatch.setattr(policylab.config, "available_memory", lambda: 10 * 2**20)
    _bad(
        ["sweep", "--store", tmp_path / "s", "--out", tmp_path / "o"],
        "n_mu/n_push/seeds_per_cell",
        tmp_path,
        "this run needs about",
    )


def test_sweep_needs_scale_with_chunk_and_grid(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default store and out folders are relative
    small = requests.SweepRequest(n_mu=2, n_push=2, seeds_per_cell=2, chunk=4)
    big = requests.SweepRequest(chunk=400)
    # the default policy's robot's records, and the store's copies of its policy and spec files
    ckpt = resolve_checkpoint(None)
    per, sim = protocol.payload_bytes(ckpt.robot), protocol.WORLD_SIM_BYTES
    kept = ckpt.path.stat().st_size + ckpt.robot.spec_file.stat().st_size
    small, big = sweep.plan(small).needs(), sweep.plan(big).needs()  # the sweep's plan holds its checkpoint
    assert small == (4 * (sim + 2 * per) + 4 * 2 * per, 8 * protocol.stored_bytes(ckpt.robot, 2.0) + kept)
    assert big[0] == 100 * small[0] and big[1] - kept == 800 * (small[1] - kept)
    workers = sweep.plan(requests.SweepRequest(executor="processes", workers=4, chunk=4)).needs()
    assert workers[0] == 4 * 4 * (sim + 2 * per) + 4 * 2 * per + 4 * protocol.WORKER_BYTES
    # the estimate covers what simulating one default chunk really takes (~213 MB measured)
    assert big[0] > 400 * 500_000


def _bytes_under(folder) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize("checkpoint", ["go1_v2", "ant_v1"])
def test_the_disk_estimate_is_within_2x_of_what_the_store_takes(checkpoint, tmp_path):
    """A sweep over the default grid's ranges, measured: the Go1 stops a rollout at its fall (most
    fall when pushed), the Ant plays every rollout to the horizon."""
    grid = ["--checkpoint", checkpoint, "--n-mu", "2", "--n-push", "3", "--seeds-per-cell", "2"]
    estimate = sweep.plan(
        requests.SweepRequest(
            **{
                "checkpoint": checkpoint,
                "n_mu": 2,
                "n_push": 3,
                "seeds_per_cell": 2,
                "store": tmp_path / "s",
                "out": tmp_path / "o",
            }
        )
    ).needs()[1]
    assert cli("sweep", *grid, "--store", tmp_path / "s", "--out", tmp_path / "o").returncode == 0
    written = _bytes_under(tmp_path / "s")
    assert written / 2 <= estimate <= 2 * written, (estimate, written)


def test_payload_bytes_is_a_stored_payload(small_sweep):
    store_root, _ = small_sweep
    with Store(store_root) as store:
        payload = store.payload(store.keys()[0])
    assert protocol.payload_bytes(robot("ant")) == sum(a.nbytes for a in payload.values())


def test_default_out_follows_the_checkpoint_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default policy's folders: test_checkpoint.py
    here = tmp_path.resolve()  # out folders are resolved (config.resolved)
    assert requests.SweepRequest(robot="ant").out == here / "runs/boundary/store-sweep-ant_v0"
    assert requests.VerifyRequest(checkpoint="ant_v1").out == here / "runs/boundary/store-verify-ant_v1"  # per store
    Store(tmp_path / "s2").close()
    assert requests.VerifyRequest(checkpoint="ant_v1", store="s2").out == here / "s2-verify-ant_v1"
    assert requests.VerifyRequest(checkpoint="ant_v1", store="s2/missing/..").out == here / "s2-verify-ant_v1"


# -- train and calibrate, small -----------------------------------------------------------------
@pytest.mark.parametrize(
    "args, field",
    [
        (["--config", "v2"], "config"),
        (["--robot", "go1", "--config", "v0"], "config"),  # the Ant's: go1's folder names go1_v0, go1_v1
        (["--iterations", "0"], "iterations"),
        (["--threads", "0"], "threads"),
        (["--threads", "2.5"], "threads"),
    ],
)
def test_bad_train_options(tmp_path, args, field):
    _bad(["train", "--out", tmp_path / "ck", *args], field, tmp_path)


def test_train_refuses_another_commands_run_folder(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text("{}")
    _bad(["train", "--iterations", "1", "--out", run], "out", tmp_path, "holds a run")


def test_train_one_iteration(tmp_path):
    r = cli("train", "--config", "v0", "--iterations", "1", "--out", tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.report == tmp_path / "ant_v0.json"
    checkpoint, survival = r.stdout.splitlines()[:2]
    assert checkpoint.startswith(f"checkpoint: {tmp_path / 'ant_v0.npz'} (sha256 ")
    assert survival.startswith("ant_v0: nominal survival ") and survival.endswith("after 1 iterations")
    info = json.loads((tmp_path / "ant_v0.json").read_text())
    assert info["config"]["iterations"] == 1 and len(info["curve"]) == 1
    assert linear.load(tmp_path / "ant_v0.npz").weights.shape == (8, 27)


def test_calibrate_small(tmp_path):
    out = tmp_path / "cal"
    r = cli("calibrate", "--robot", "ant", "--n-nominal", "2", "--n-pushed", "1", "--out", out)
    assert r.returncode == 0, r.stderr
    assert r.report == out / "calibration.json"
    assert r.stdout.splitlines()[0].startswith("ant_v0: nominal ") and "/2 survived" in r.stdout
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["n_nominal"] == 2 and cfg["n_pushed"] == 1 and cfg["checkpoint"]["name"] == "ant_v0"
    rep = json.loads((out / "calibration.json").read_text())
    assert rep["nominal"]["n"] == 2 and len(rep["pushed"]) == 12
