"""Bad input through the real CLI: one line naming the field, exit 2, nothing written."""

from __future__ import annotations

import json

import pytest

from tests.support.lava_run_cache import cli


@pytest.mark.parametrize(
    "args, field",
    [
        (["--rounds", "0"], "rounds"),
        (["--rounds", "-5"], "rounds"),
        (["-G", "0"], "group_size"),
        (["--eps", "0"], "eps"),
        (["--eps", "1"], "eps"),
        (["--eps", "1.5"], "eps"),
    ],
)
def test_bad_hyperparameters(tmp_path, args, field):
    out = tmp_path / "out"
    proc = cli("--out", out, *args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"policylab: error: {field}:"), proc.stderr
    assert not out.exists()


def test_out_folder_with_a_different_config(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    cfg = out / "config.json"
    cfg.write_text(json.dumps({"study": "lava_leap", "lr": 0.1}))
    before = sorted(p.name for p in out.iterdir())
    proc = cli("--out", out)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("policylab: error: out:"), proc.stderr
    assert sorted(p.name for p in out.iterdir()) == before
    assert json.loads(cfg.read_text()) == {"study": "lava_leap", "lr": 0.1}
