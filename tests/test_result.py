"""Every rerun line a report prints runs as printed (`policylab.result.command_line` and the lines the
reports build beside it): a small `breakout train` and a small `breakout learn`, then each `rerun` /
`rerun_commands` entry found in their JSON files, split as a shell would and run in-process. A rerun
into the same folder resumes and rewrites the same bytes; `validate_pick` replays the pick's
validation episodes on ALE and scores what the report says. (`policylab demo` writes a train
report: its lines come from the same code, on the demo's defaults, which tests/studies/test_demo.py
runs; a third test checks that the demo's train line parses into the demo's request.)"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from policylab.cli import invoke

pytestmark = pytest.mark.slow

TRAIN = [
    "breakout",
    "train",
    "--space",
    "random",
    "--budget",
    "2",
    "--search-seeds",
    "2",
    "--rounds",
    "1",
    "--validate-episodes",
    "2",
    "--exact-episodes",
    "4",
    "--max-steps",
    "50",
    "--no-video",
]
LEARN = [
    "breakout",
    "learn",
    "--steps",
    "1024",
    "--envs",
    "8",
    "--rollout",
    "32",
    "--minibatch",
    "64",
    "--epochs",
    "2",
    "--hidden",
    "16",
    "--max-steps",
    "40",
    "--validate-episodes",
    "2",
    "--gap-episodes",
    "2",
    "--executor",
    "local",
]


def rerun_lines(folder: Path) -> dict[str, str]:
    """{"file: key": line} for every `rerun` string and `rerun_commands` entry in the run's JSON files."""
    found = {}

    def walk(obj, where: str) -> None:
        if isinstance(obj, dict):
            for key, value in obj.items():
                if key == "rerun" and isinstance(value, str):
                    found[where + key] = value
                elif key == "rerun_commands":
                    found.update({f"{where}{key}.{k}": v for k, v in value.items()})
                else:
                    walk(value, f"{where}{key}.")
        elif isinstance(obj, list):
            for item in obj:
                walk(item, where)

    for path in sorted(folder.glob("*.json")):
        walk(json.loads(path.read_text()), f"{path.name}: ")
    return found


def run_line(line: str) -> int:
    argv = shlex.split(line)
    assert argv[0] == "policylab", line
    return invoke(argv[1:])


def test_train_rerun_commands_run(tmp_path):
    out = tmp_path / "train"
    assert invoke([*TRAIN, "--out", str(out)]) == 0
    report = (out / "report.json").read_bytes()
    lines = rerun_lines(out)
    assert set(lines) == {
        f"{f}: rerun_commands.{k}" for f in ("report.json", "manifest.json") for k in ("train", "validate_pick")
    }
    for where, line in lines.items():
        assert run_line(line) == 0, (where, line)
    assert (out / "report.json").read_bytes() == report  # the train line resumes into the same bytes
    # validate_pick: the pick alone on ALE on the confirmation seeds (the first of the exact validation
    # seeds), with policy_params.json as written: ALE's scores are the shadow's on those seeds
    data = json.loads(report)
    validated = json.loads((tmp_path / "train-validate" / "report.json").read_text())
    ale = validated["distribution"]["scores"]
    assert len(ale) == data["evaluation"]["ale_confirmation"]["of"]
    assert ale == data["evaluation"]["new_policy"]["scores"][: len(ale)]


def test_learn_rerun_resumes_to_the_same_bytes(tmp_path):
    out = tmp_path / "learn"
    assert invoke([*LEARN, "--out", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in (out / "learn.json", out / "checkpoint.pt", out / "policy.onnx")}
    lines = rerun_lines(out)
    assert list(lines) == ["learn.json: rerun"]
    assert run_line(lines["learn.json: rerun"]) == 0
    after = {name: (out / name).read_bytes() for name in before}
    assert after["checkpoint.pt"] == before["checkpoint.pt"] and after["policy.onnx"] == before["policy.onnx"]
    # learn.json holds the run's wall-clock timings (its own section); everything else is the same
    strip = lambda raw: {k: v for k, v in json.loads(raw).items() if k != "timing"}  # noqa: E731
    assert strip(after["learn.json"]) == strip(before["learn.json"])


def test_the_demos_train_line_is_the_demos_run(tmp_path):
    """`policylab demo` writes `breakout train`'s report with the demo's request; its train line, parsed
    by the CLI's own parser into the request the command would run, is that request (running the
    line is running the demo again: tests/studies/test_demo.py runs the demo, and the small train
    above runs both kinds of line)."""
    import typer

    from policylab.cli import build_app
    from policylab.config import validated
    from policylab.result import PLACEMENT_FIELDS, command_line
    from policylab.studies.breakout.requests import DemoRequest, TrainRequest

    want = validated(DemoRequest, {"out": tmp_path / "demo"}).train_request()
    argv = shlex.split(command_line("policylab breakout train", want))
    assert argv[:3] == ["policylab", "breakout", "train"]
    group = typer.main.get_command(build_app()).commands["breakout"]
    ctx = group.commands["train"].make_context("train", argv[3:])
    got = validated(TrainRequest, {k: v for k, v in ctx.params.items() if v is not None})
    # placement (the demo runs its episodes in processes) is left out: results never depend on it
    exclude = set(PLACEMENT_FIELDS)
    assert got.model_dump(exclude=exclude) == want.model_dump(exclude=exclude)
