"""Every option of every command, given a value its request model forbids: one line on stderr that
names the option, exit status 2, nothing on stdout, and nothing written anywhere.

The cases are derived from the request models themselves (types, bounds, choices, path kinds), so
a new command or option is fuzzed without touching this file; a new command only needs a valid
baseline in `BASELINES` (the test fails until it has one). Calls run in-process through
`policylab.cli.invoke`: hundreds of them would cost minutes as subprocesses.
"""

from __future__ import annotations

import json
import os
import typing
from pathlib import Path
from typing import Any, Literal

import pytest

from policylab.cli import invoke
from policylab.result import flag_of
from tests.support.cli_commands import COMMANDS

CORRUPT = b"\x00\xff\xfenot json, not an npz, not a store\n"

# A valid command line per command; {tmp} is the test's scratch folder, {params}/{candidates}/...
# name files the fixture writes there. Only the fuzzed option is ever wrong.
BASELINES: dict[str, list[str]] = {
    "lava-leap run": ["--out", "{tmp}/out"],
    "breakout eval": ["--env", "shadow", "--policy", "breakout_policy_v3", "--episodes", "2", "--out", "{tmp}/out"],
    "breakout audit": ["--policy", "breakout_policy_v3", "--episodes", "2", "--out", "{tmp}/out"],
    "breakout train": ["--out", "{tmp}/out"],
    "breakout transfer": ["--policy", "{net}", "--episodes", "1", "--gap-episodes", "1", "--out", "{tmp}/out"],
    "breakout learn": [
        "--out",
        "{tmp}/out",
        "--steps",
        "256",
        "--envs",
        "4",
        "--rollout",
        "64",
        "--minibatch",
        "64",
        "--validate-episodes",
        "0",
    ],
    "breakout trace": ["--out", "{tmp}/out"],
    "breakout calibrate": ["--out", "{tmp}/out"],
    "breakout lockstep": ["--episodes", "1", "--max-steps", "2", "--policy", "v3", "--out", "{tmp}/out"],
    "demo": ["--out", "{tmp}/out"],
    "runs": ["{tmp}/runs"],
    "boundary robot": ["ant", "--zero-policy-worlds", "1", "--out", "{tmp}/out"],
    "boundary train": ["--config", "v0", "--iterations", "1", "--out", "{tmp}/out"],
    "boundary learn": [
        "--steps",
        "64",
        "--envs",
        "8",
        "--rollout",
        "8",
        "--minibatch",
        "32",
        "--hidden",
        "8",
        "--eval-worlds",
        "1",
        "--out",
        "{tmp}/out",
    ],
    "boundary calibrate": ["--checkpoint", "ant_v0", "--n-nominal", "1", "--n-pushed", "1", "--out", "{tmp}/out"],
    "boundary sweep": [
        "--checkpoint",
        "ant_v0",
        "--n-mu",
        "2",
        "--n-push",
        "2",
        "--seeds-per-cell",
        "1",
        "--store",
        "{tmp}/store",
        "--out",
        "{tmp}/out",
    ],
    "boundary search": [
        "--checkpoint",
        "ant_v0",
        "--rows",
        "friction=0.5",
        "--budget",
        "4",
        "--store",
        "{tmp}/store",
        "--out",
        "{tmp}/out",
    ],
    "boundary verify": ["--checkpoint", "ant_v0", "--store", "{store}", "--sample", "1", "--out", "{tmp}/out"],
    "boundary reduce": ["--store", "{store}", "--checkpoint", "ant_v0", "--resamples", "100", "--out", "{tmp}/out"],
    "boundary select": ["--out", "{ana}"],
    "boundary replay": ["--out", "{ana}"],
    "boundary clips": ["--out", "{ana}", "--width", "32", "--height", "32"],
    "boundary rrd": ["--out", "{ana}"],
    "boundary report": ["--out", "{ana}"],
    "boundary diff": [
        "--store",
        "{store}",
        "--a",
        "ant_v0",
        "--b",
        "ant_v1",
        "--resamples",
        "100",
        "--out",
        "{tmp}/out",
    ],
    "boundary probe": ["--store", "{store}", "--out", "{tmp}/out"],
    "store check": ["{store}"],
    "store pack": ["{store}"],
    "export": ["{store}", "--out", "{tmp}/table.parquet"],
}

# str options whose text is free (any value is valid): only type-level cases apply to them.
FREE_TEXT: set[tuple[str, str]] = {("export", "study")}


def _kind(annotation: Any) -> Any:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is Literal:
        return Literal
    if typing.get_origin(annotation) in (typing.Union, __import__("types").UnionType) and args:
        return _kind(args[0])
    if typing.get_origin(annotation) is typing.Annotated:
        return _kind(args[0])
    return annotation


def _bounds(info) -> dict[str, float]:
    out = {}
    for m in info.metadata:
        for key in ("ge", "gt", "le", "lt"):
            if getattr(m, key, None) is not None:
                out[key] = getattr(m, key)
    return out


def _path_role(name: str, info) -> str:
    validators = " ".join(repr(m) for m in info.metadata) + repr(info.annotation)
    if "check_out_dir" in validators:
        return "out"
    if "check_input_file" in validators:
        return "input"
    if name == "store" or name.startswith("store"):
        return "store"
    return "folder"


def bad_values(name: str, info) -> list[tuple[str, str]]:
    """(label, text) pairs the model must refuse for this field."""
    kind = _kind(info.annotation)
    if kind is bool:
        return []
    cases: list[tuple[str, str]] = []
    if kind in (int, float):
        cases += [("text", "abc"), ("nan", "nan"), ("inf", "inf"), ("-inf", "-inf"), ("overflow", "1e999")]
        if kind is int:
            cases += [("fraction", "1.5"), ("huge", str(10**30))]
        b = _bounds(info)
        if "ge" in b:
            cases.append(("below", str(b["ge"] - 1)))
        if "gt" in b:
            cases.append(("at-open-lower", str(b["gt"])))
        if "le" in b:
            cases.append(("above", str(b["le"] + 1) if kind is int else str(b["le"] * 2 + 1)))
        if "lt" in b:
            cases.append(("at-open-upper", str(b["lt"])))
        return cases
    if kind is Literal:
        return [("choice", "nope-not-a-choice")]
    if isinstance(kind, type) and issubclass(kind, Path):
        role = _path_role(name, info)
        if role == "out":
            return [("unwritable", "/proc/policylab/x"), ("is-a-file", "{corrupt}"), ("other-config", "{other_run}")]
        if role == "store":
            return [("not-a-store", "{junk_dir}"), ("is-a-file", "{corrupt}")]
        if role == "input":
            return [("missing", "{tmp}/missing.json"), ("a-folder", "{junk_dir}"), ("corrupt", "{corrupt}")]
        return [("missing", "{tmp}/missing-folder"), ("is-a-file", "{corrupt}")]
    cases = [("missing-file", "{tmp}/missing.json"), ("corrupt-file", "{corrupt}")]
    return cases + [("unknown", "nope-not-a-thing")]


def _cases():
    for cmd, model in sorted(COMMANDS.items()):
        if model is None:
            continue
        for name, info in model.model_fields.items():
            opt = info.alias or name
            if (cmd, opt) in FREE_TEXT and _kind(info.annotation) is str:
                continue
            for label, value in bad_values(opt, info):
                yield pytest.param(cmd, opt, value, id=f"{cmd.replace(' ', '-')}:{opt}:{label}")


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> dict[str, Path]:
    """Runs that later stages need as valid input: two tiny boundary sweeps in one store and an
    analysis folder taken through replay (made once, through the real CLI)."""
    root = tmp_path_factory.mktemp("fuzz-shared")
    store, ana = root / "store", root / "ana"
    for name in ("ant_v0", "ant_v1"):
        assert (
            invoke(
                [
                    "boundary",
                    "sweep",
                    "--checkpoint",
                    name,
                    "--n-mu",
                    "2",
                    "--n-push",
                    "2",
                    "--seeds-per-cell",
                    "1",
                    "--store",
                    str(store),
                    "--out",
                    str(root / f"sweep-{name}"),
                ]
            )
            == 0
        )
        # the equivalence gate, which diff and report require
        assert (
            invoke(
                [
                    "boundary",
                    "verify",
                    "--checkpoint",
                    name,
                    "--store",
                    str(store),
                    "--sample",
                    "1",
                    "--out",
                    str(root / f"verify-{name}"),
                ]
            )
            == 0
        )
    assert (
        invoke(
            [
                "boundary",
                "reduce",
                "--store",
                str(store),
                "--checkpoint",
                "ant_v0",
                "--resamples",
                "100",
                "--out",
                str(ana),
            ]
        )
        == 0
    )
    assert invoke(["boundary", "select", "--out", str(ana), "--n-boundary", "1", "--n-recoveries", "0"]) == 0
    assert invoke(["boundary", "replay", "--out", str(ana)]) == 0
    return {"root": root, "store": store, "ana": ana}


@pytest.fixture
def scratch(tmp_path, monkeypatch, shared):
    """A scratch folder with the files baselines and cases name; cwd moves there so a default
    output location (runs/...) would be caught as a write too."""
    (tmp_path / "runs").mkdir()
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "file.txt").write_text("not a store")
    (tmp_path / "corrupt.bin").write_bytes(CORRUPT)
    _network_file(tmp_path / "net.onnx")
    other = tmp_path / "other_run"
    other.mkdir()
    (other / "config.json").write_text(json.dumps({"command": "someone else's run"}))
    monkeypatch.chdir(tmp_path)
    _SHARED.update(shared)
    return tmp_path


_SHARED: dict[str, Path] = {}


def _network_file(path: Path) -> None:
    """A valid Breakout network file (all-zero weights: only its validity matters here)."""
    import numpy as np

    from policylab.policies.breakout_net import N_ACTIONS, NetObsSpec, export_onnx

    spec = NetObsSpec(history=1, wall=False)
    export_onnx([(np.zeros((N_ACTIONS, spec.dim)), np.zeros(N_ACTIONS))], spec, path)


def _fill(text: str, tmp: Path) -> str:
    return text.format(
        tmp=tmp,
        corrupt=tmp / "corrupt.bin",
        other_run=tmp / "other_run",
        junk_dir=tmp / "junk",
        net=tmp / "net.onnx",
        store=_SHARED.get("store"),
        ana=_SHARED.get("ana"),
    )


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = Path(dirpath) / n
            st = p.lstat()
            out[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns if p.is_file() else 0)
    return out


def _argv(cmd: str, opt: str, value: str, tmp: Path) -> list[str]:
    base = [_fill(a, tmp) for a in BASELINES[cmd]]
    model = COMMANDS[cmd]
    info = next(f for n, f in model.model_fields.items() if (f.alias or n) == opt)
    if (info.json_schema_extra or {}).get("argument"):
        positional = [a for a in base if not a.startswith("-")][:1]
        rest = [a for a in base if a not in positional]
        return [*cmd.split(), _fill(value, tmp), *rest]
    flag = flag_of(opt)
    if flag in base:  # replace the baseline's value
        i = base.index(flag)
        base = base[:i] + base[i + 2 :]
    return [*cmd.split(), *base, flag, _fill(value, tmp)]


def test_every_command_has_a_baseline():
    missing = sorted(set(COMMANDS) - set(BASELINES))
    assert not missing, f"add a valid baseline for {missing} to BASELINES"
    legacy = sorted(c for c, m in COMMANDS.items() if m is None)
    assert not legacy, f"commands not built from a request model: {legacy}"


def test_every_number_is_bounded_on_both_sides():
    loose = []
    for cmd, model in COMMANDS.items():
        for name, info in model.model_fields.items() if model else ():
            if _kind(info.annotation) in (int, float):
                b = _bounds(info)
                if not ({"ge", "gt"} & set(b) and {"le", "lt"} & set(b)):
                    loose.append(f"{cmd} --{info.alias or name}")
    assert not loose, f"options without a lower and an upper bound: {loose}"


@pytest.mark.parametrize("cmd, opt, value", list(_cases()))
def test_bad_value_is_one_line_exit_2_nothing_written(cmd, opt, value, scratch, capsys):
    before = _snapshot(scratch), _snapshot(_SHARED["root"])
    rc = invoke(_argv(cmd, opt, value, scratch))
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert rc == 2, (rc, captured.err[-2000:])
    assert len(lines) == 1 and lines[0].startswith("policylab: error: "), captured.err
    assert opt in lines[0] or flag_of(opt) in lines[0], lines[0]
    assert captured.out == ""
    assert (_snapshot(scratch), _snapshot(_SHARED["root"])) == before
