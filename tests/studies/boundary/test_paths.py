"""Stores are recorded as resolved paths, and the commands the tool suggests quote their paths."""

from __future__ import annotations

import json
import shlex

from policylab.cli import invoke
from policylab.studies.boundary.gate import verify_command

TINY = ["boundary", "sweep", "--robot", "ant", "--n-mu", "1", "--n-push", "1", "--seeds-per-cell", "2", "--chunk", "2"]


def test_one_store_named_from_two_folders_is_one_config(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    assert invoke([*TINY, "--store", "S", "--out", "O"]) == 0
    config = json.loads((tmp_path / "O" / "config.json").read_text())
    assert config["store"] == str((tmp_path / "S").resolve())
    monkeypatch.chdir(tmp_path / "sub")
    assert invoke([*TINY, "--store", "../S", "--out", "../O"]) == 0  # the same run, resumed
    assert invoke([*TINY, "--store", str(tmp_path / "S"), "--out", str(tmp_path / "O")]) == 0
    assert json.loads((tmp_path / "O" / "config.json").read_text()) == config


def test_the_suggested_verify_command_quotes_its_paths(tmp_path):
    store = tmp_path / "my runs" / "store"
    cmd = verify_command(store, "my policy.npz", "ant")
    assert shlex.split(cmd) == [
        "policylab",
        "boundary",
        "verify",
        "--robot",
        "ant",
        "--checkpoint",
        "my policy.npz",
        "--store",
        str(store),
    ]
