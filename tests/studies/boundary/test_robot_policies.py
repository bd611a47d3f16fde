"""A robot is its spec folder: a robot brought by this test alone (a folder holding its MJCF, its spec and its
policies file, which names a trainer config and the default checkpoint that config trains) trains with ARS and
sweeps through the CLI, with nothing edited or written in the package; the shipped robots' folders give
`--config` its choices and `--help` its robots and defaults the same way."""

from __future__ import annotations

import json

from policylab.envs.robots.spec import SPECS_DIR, available
from policylab.hashing import sha256_hex
from policylab.rollout.store import Store
from policylab.studies.boundary import requests
from policylab.studies.boundary.constants import CHECKPOINT_DIR
from policylab.studies.boundary.records import meta_name
from policylab.studies.boundary.robot_policies import default_checkpoint, policies_path, train_configs
from tests.support.boundary_fixtures import cli
from tests.support.robot_specs import write_crate

# A few ARS iterations of the crate: 2 directions, 1 s episodes, evaluated once on 2 worlds.
TINY = {"iterations": 2, "directions": 2, "top": 1, "horizon_steps": 40, "eval_every": 2, "eval_seeds": 2}
POLICIES = {
    "default_checkpoint": "crate_v0.npz",
    "train": {"crate_v0": {"description": "the crate, a few iterations", "config": {"name": "crate_v0", **TINY}}},
}


def _package_files() -> dict:
    """Every file of the shipped spec folders and committed checkpoints, with its size and mtime."""
    return {
        p: (p.stat().st_size, p.stat().st_mtime_ns)
        for folder in (SPECS_DIR, CHECKPOINT_DIR)
        for p in folder.rglob("*")
        if p.is_file()
    }


def test_a_robot_of_ones_own_is_a_folder_that_trains_and_sweeps(tmp_path):
    before = _package_files()
    folder = tmp_path / "crate"
    spec = write_crate(folder)
    (folder / "crate.policies.json").write_text(json.dumps(POLICIES))
    assert policies_path(str(spec)) == folder / "crate.policies.json"
    assert default_checkpoint(str(spec)) == str((folder / "crate_v0.npz").resolve())  # relative to the folder

    r = cli("train", "--robot", spec, "--config", "crate_v0", "--out", folder)
    assert r.returncode == 0, r.stderr
    info = json.loads((folder / "crate_v0.json").read_text())
    assert info["config"] == train_configs(str(spec))["crate_v0"].model_dump(mode="json")
    assert info["config"]["robot"] == str(spec.resolve()) and len(info["curve"]) == 2
    assert info["robot"]["name"] == "crate"

    store = tmp_path / "store"
    r = cli("sweep", "--robot", spec, "--n-mu", 1, "--n-push", 2, "--seeds-per-cell", 1, "--store", store)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "store-sweep-crate_v0" / "sweep.json").is_file()  # named by the folder's default
    with Store(store) as s:
        meta = s.get_meta(meta_name("crate_v0"))
        assert len(list(s.records("boundary"))) == 2
    assert meta["robot"]["ref"] == str(spec.resolve())
    assert meta["checkpoint"] == {"name": "crate_v0", "sha256": info["checkpoint_sha256"]}
    assert sha256_hex((folder / "crate_v0.npz").read_bytes()) == info["checkpoint_sha256"]
    assert _package_files() == before and "crate" not in available()


def test_a_config_the_robots_folder_does_not_name_is_refused(tmp_path):
    """One line naming `config` and the configs the folder names; a user's config needs its --robot."""
    folder = tmp_path / "crate"
    spec = write_crate(folder)
    (folder / "crate.policies.json").write_text(json.dumps(POLICIES))
    for args, words in (
        (("--robot", spec, "--config", "v0"), f"{folder / 'crate.policies.json'} names crate_v0"),
        (("--config", "crate_v0"), "the shipped robots' spec folders name v0, v1, go1_v0, go1_v1"),
        (("--robot", write_crate(tmp_path / "bare"), "--config", "v0"), "crate.policies.json names none"),
    ):
        r = cli("train", *args, "--out", tmp_path / "ck")
        assert r.returncode == 2
        (line,) = r.stderr.strip().splitlines()
        assert line.startswith("policylab: error: config: unknown config") and words in line, line
    assert not (tmp_path / "ck").exists()


def test_a_bad_policies_file_is_refused_naming_the_robot(tmp_path):
    """Before anything is written: by `robot` (its spec argument), by `train` and by a sweep that would play
    the folder's default."""
    folder = tmp_path / "crate"
    spec = write_crate(folder)
    config = {"description": "x", "config": {"name": "x"}}
    for content, words in (
        ("{not json", "is not JSON"),
        (json.dumps({"train": {"x": {**config, "config": {"name": "x", "robot": "ant"}}}}), "train.x.config.robot"),
        (json.dumps({"train": {"x": {**config, "config": {"name": "x", "top": 0}}}}), "train.x.config.top"),
        (json.dumps({"default_checkpoint": "", "train": {"x": config}}), "default_checkpoint"),
    ):
        (folder / "crate.policies.json").write_text(content)
        for field, args in (
            ("spec", ("robot", spec, "--out", tmp_path / "out")),
            ("robot", ("train", "--robot", spec, "--config", "x", "--out", tmp_path / "out")),
            ("robot", ("sweep", "--robot", spec, "--store", tmp_path / "store")),
        ):
            r = cli(*args)
            assert r.returncode == 2
            (line,) = r.stderr.strip().splitlines()
            assert line.startswith(f"policylab: error: {field}: robot policies ") and words in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["crate"]


def test_the_shipped_folders_are_the_registry():
    """The shipped robots' folders name the defaults and configs the code once listed, and --help lists every
    shipped folder's robot with its default."""
    defaults = {"ant": "ant_v0", "go1": "go1_v0", "go1_imu": "go1_v4"}
    assert {r: default_checkpoint(r) for r in defaults} == defaults
    configs = {k: c.robot for k, c in train_configs().items()}
    assert configs.items() >= {"v0": "ant", "v1": "ant", "go1_v0": "go1", "go1_v1": "go1"}.items()
    robot_help = " ".join(requests.ROBOT_HELP.split())
    checkpoint_help = " ".join(requests.CHECKPOINT_HELP.split())
    for r in available():
        assert r in robot_help and f"{r} {default_checkpoint(r)}" in checkpoint_help
