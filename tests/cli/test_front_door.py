"""The CLI's promises that hold for every command: `--help` loads no heavy library, an internal
error is one line plus a log file (never a traceback on the terminal), and a run ends with
`report: PATH` as the last line on stdout."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from policylab.cli import build_app, invoke
from tests.support.cli_commands import COMMANDS

HEAVY = (
    "numpy",
    "numba",
    "scipy",
    "mujoco",
    "ale_py",
    "torch",
    "matplotlib",
    "gymnasium",
    "ray",
    "rerun",
    "optuna",
    "onnxruntime",
    "imageio",
)


def test_help_of_every_command_loads_no_heavy_library():
    """What makes `--help` and bad input answer fast: building the CLI and printing every help page
    imports none of the libraries a run needs (checked in a fresh interpreter)."""
    script = (
        "import sys, contextlib, io\n"
        "from policylab.cli import invoke\n"
        f"for cmd in {sorted(COMMANDS)!r}:\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        assert invoke([*cmd.split(), '--help']) == 0, cmd\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_every_help_names_its_options_bounds(capsys):
    for cmd, model in COMMANDS.items():
        assert invoke([*cmd.split(), "--help"]) == 0
        text = " ".join(capsys.readouterr().out.split())
        for name, info in model.model_fields.items():
            assert ("--" + (info.alias or name).replace("_", "-")) in text or (info.alias or name).upper() in text


def test_every_option_shows_what_its_value_looks_like(capsys):
    """No option's value is a bare VALUE: a repeatable option shows one item (`--policy [v3|pick|...]`),
    a comma-separated list its item type (`--command FLOAT,...`)."""
    for cmd in COMMANDS:
        assert invoke([*cmd.split(), "--help"]) == 0
        text = capsys.readouterr().out
        assert not re.search(r"--[\w-]+ VALUE\b", text), (cmd, re.findall(r"--[\w-]+ VALUE\b", text))
    assert invoke(["boundary", "sweep", "--help"]) == 0
    assert "--command FLOAT,..." in capsys.readouterr().out
    assert invoke(["breakout", "lockstep", "--help"]) == 0
    assert "--policy [v3|pick|random-v3|random-actions]" in capsys.readouterr().out


def test_help_names_every_breakout_preset(capsys):
    for cmd in ("breakout eval", "breakout audit", "breakout train"):
        assert invoke([*cmd.split(), "--help"]) == 0
        text = " ".join(capsys.readouterr().out.split())
        for preset in ("ale-exact", "atari-cal", "atari", "go-v1"):
            assert preset in text, (cmd, preset)


def test_internal_error_is_one_line_and_a_log_file(tmp_path, monkeypatch, capsys):
    """A failure that is not bad input (here: the study's writer breaks) exits 1 with one line that
    names a log file holding the traceback; the claimed out folder stays resumable."""
    from policylab.studies.lava_leap import report

    def broken(cfg, out):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(report, "write_outputs", broken)
    out = tmp_path / "out"
    rc = invoke(["lava-leap", "run", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1
    m = re.fullmatch(r"policylab: error: internal error: RuntimeError: disk on fire \(traceback in (.+)\)", err[0])
    assert m, err
    log = Path(m.group(1))
    assert log.parent == out and "Traceback" in log.read_text() and "disk on fire" in log.read_text()
    assert json.loads((out / "config.json").read_text())["study"] == "lava_leap"  # resumable: same config


def test_internal_error_without_a_run_folder_logs_to_temp(tmp_path, monkeypatch, capsys):
    from policylab.cli import top

    def broken(req):
        raise RuntimeError("index broke")

    monkeypatch.setattr(top, "runs", broken)
    rc = invoke(["runs", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and "internal error: RuntimeError: index broke" in err
    log = Path(re.search(r"traceback in (.+)\)", err).group(1))
    assert log.is_file() and log.parent != tmp_path


def test_a_run_ends_with_its_report_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert invoke(["runs", str(tmp_path / "empty")]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1] == f"report: {tmp_path / 'empty' / 'index.html'}"


@pytest.mark.parametrize("argv", [["nope"], ["breakout", "nope"], ["breakout", "eval", "--nope", "1"]])
def test_usage_errors_are_one_line(argv, capsys):
    assert invoke(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("policylab: error: ")


def test_no_arguments_prints_help(capsys):
    assert invoke([]) == 0
    assert "Usage: policylab" in capsys.readouterr().out
    assert build_app().info.name == "policylab"
