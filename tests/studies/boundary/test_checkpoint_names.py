"""Every boundary command takes a checkpoint by its stored name or by its policy file's path alike, and a
name clash says what to do in one line. Before, `reduce` wanted the stored name (a path: "no sweep of
checkpoint '/.../pd_soft.npz'") and `verify` refused it ("unknown checkpoint 'pd_soft'")."""

from __future__ import annotations

import json

import numpy as np

from policylab.policies import linear
from tests.support.boundary_fixtures import cli, pd_checkpoint

GRID = (
    "--mu-min",
    0.5,
    "--mu-max",
    1.0,
    "--n-mu",
    1,
    "--push-min",
    10,
    "--push-max",
    20,
    "--n-push",
    1,
    "--seeds-per-cell",
    2,
)


def _one_line(r, field: str) -> str:
    assert r.returncode == 2, (r.stdout, r.stderr)
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"policylab: error: {field}: "), line
    return line


def test_a_stored_name_and_a_path_are_taken_alike(tmp_path, monkeypatch):
    policy = pd_checkpoint(tmp_path / "checkpoints", "pd_soft")
    store = tmp_path / "store"
    assert (
        cli(
            "sweep", "--robot", "ant", "--checkpoint", policy, *GRID, "--store", store, "--out", tmp_path / "sweep"
        ).returncode
        == 0
    )
    # verify by the stored name (its robot and policy file from the store) and by the path
    for spec, robot in (("pd_soft", ()), (policy, ("--robot", "ant"))):
        r = cli(
            "verify",
            *robot,
            "--checkpoint",
            spec,
            "--store",
            store,
            "--sample",
            2,
            "--out",
            tmp_path / f"v{len(robot)}",
        )
        assert r.returncode == 0, r.stderr
    # reduce by the path and by the name: the same analysis folder (its config names the stored sweep)
    for spec in (policy, "pd_soft"):
        r = cli("reduce", "--store", store, "--checkpoint", spec, "--resamples", 100, "--out", tmp_path / "ana")
        assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "ana" / "config.json").read_text())["checkpoint"] == "pd_soft"

    # two policy files with one name: the second is another policy, refused in one line saying what to do
    other = tmp_path / "elsewhere" / "pd_soft.npz"
    other.parent.mkdir()
    p = linear.load(policy)
    linear.save(other, linear.LinearPolicy(p.weights * 0.5, p.obs_mean, np.ones_like(p.obs_std)))
    line = _one_line(cli("reduce", "--store", store, "--checkpoint", other, "--out", tmp_path / "ana2"), "checkpoint")
    assert "two policy files share the name 'pd_soft'" in line and "rename" in line
    line = _one_line(
        cli("sweep", "--robot", "ant", "--checkpoint", other, *GRID, "--store", store, "--out", tmp_path / "sweep2"),
        "checkpoint",
    )
    assert "two policy files share the name 'pd_soft'" in line and "another --store" in line

    # a stored name that is also a path here: one line saying how to give either
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pd_soft").mkdir()
    line = _one_line(cli("verify", "--checkpoint", "pd_soft", "--store", store, "--out", tmp_path / "v9"), "checkpoint")
    assert "is also a path here; give the file as ./pd_soft" in line
    line = _one_line(
        cli("reduce", "--store", store, "--checkpoint", "pd_soft", "--out", tmp_path / "ana3"), "checkpoint"
    )
    assert "is also a path here" in line
    assert not any((tmp_path / d).exists() for d in ("v9", "ana2", "ana3", "sweep2"))
