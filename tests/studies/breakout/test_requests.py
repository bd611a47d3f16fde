"""The Breakout commands' front door: request models with every number bounded, one-line errors
(exit 2, nothing written) for bad input anywhere, runs too big for the machine refused up front."""

from __future__ import annotations

import json
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from policylab.cli import invoke
from policylab.studies.breakout import requests, sizes

MODELS = [
    requests.EvalRequest,
    requests.AuditRequest,
    requests.TrainRequest,
    requests.TraceRequest,
    requests.CalibrateRequest,
    requests.DemoRequest,
]
SHADOW_MODELS = [requests.EvalRequest, requests.AuditRequest, requests.TrainRequest]
EVAL = ["breakout", "eval", "--env", "ale", "--policy", "breakout_policy_v3", "--episodes", "2"]
AUDIT = ["breakout", "audit", "--policy", "breakout_policy_v3"]


def run(capsys, *args) -> tuple[int, str, str]:
    code = invoke([str(a) for a in args])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _number_type(annotation) -> type | None:
    args = [a for a in typing.get_args(annotation) if a is not type(None)] or [annotation]
    return next((a for a in args if a in (int, float)), None)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_number_has_a_lower_and_an_upper_bound(model):
    for name, info in model.model_fields.items():
        if _number_type(info.annotation) is None:
            continue
        kinds = {attr for m in info.metadata for attr in ("ge", "gt", "le", "lt") if getattr(m, attr, None) is not None}
        assert kinds & {"ge", "gt"} and kinds & {"le", "lt"}, f"{model.__name__}.{name} needs both bounds"
        assert info.description, f"{model.__name__}.{name} has no help"


def test_the_policy_choice_is_the_policy_registry():
    from policylab.policies.breakout import POLICIES

    assert set(typing.get_args(requests.PolicyName)) == set(POLICIES)


@pytest.mark.parametrize("model", SHADOW_MODELS, ids=lambda m: m.__name__)
def test_the_exact_preset_is_the_default_and_the_help_names_every_preset(model):
    from policylab.envs.breakout.params import preset_names

    info = model.model_fields["preset"]
    assert info.default == requests.DEFAULT_PRESET == "ale-exact"
    for name in preset_names():
        assert name in info.description
    assert ".json" in info.description
    assert requests.DemoRequest(out=Path("x")).train_request().preset == "ale-exact"


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_executor_option_comes_with_a_ray_address(model):
    assert ("executor" in model.model_fields) == ("ray_address" in model.model_fields)


def test_the_breakout_commands_load_no_simulator_or_policy_code_until_they_run():
    """What `policylab ... --help` imports for Breakout: the request models only (the other groups'
    imports are theirs)."""
    code = (
        "import sys, typer; from typer.testing import CliRunner; from policylab.cli.breakout import app; "
        "r = CliRunner().invoke(app, ['train', '--help']); assert r.exit_code == 0 and '--search-seeds' in "
        "r.output, r.output; print(sorted(m for m in ('numba', 'ale_py', 'policylab.policies.breakout', "
        "'policylab.studies.breakout.episodes.runner', 'policylab.envs.breakout.shadow') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def _params_file(tmp_path: Path, data) -> Path:
    path = tmp_path / "params.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def _v3(**change):
    from policylab.policies.breakout import V3_DEFAULTS

    return {k: v for k, v in {**V3_DEFAULTS, **change}.items() if v is not None}


def _candidates(tmp_path: Path, data) -> Path:
    path = tmp_path / "cands.json"
    path.write_text(json.dumps(data))
    return path


def _net(tmp_path: Path) -> Path:
    from policylab.policies.breakout_net import NetObsSpec
    from tests.support.breakout_nets import export, torch_mlp

    spec = NetObsSpec(history=1, wall=True)
    export(torch_mlp(spec, 0), spec, tmp_path / "net.onnx")
    return tmp_path / "net.onnx"


BAD = [
    # eval
    ("unknown_policy", lambda t: [*EVAL[:4], "breakout_policy_v9", *EVAL[5:]], "policy"),
    ("zero_episodes", lambda t: [*EVAL[:-1], "0"], "episodes"),
    ("too_many_episodes", lambda t: [*EVAL[:-1], "100001"], "episodes"),
    ("negative_seed", lambda t: [*EVAL, "--seed", "-1"], "seed"),
    ("huge_seed", lambda t: [*EVAL, "--seed", str(2**31)], "seed"),
    ("seed_not_a_number", lambda t: [*EVAL, "--seed", "three"], "seed"),
    ("max_steps_past_ale_cap", lambda t: [*EVAL, "--max-steps", "27001"], "max_steps"),
    ("sticky_above_1", lambda t: [*EVAL, "--sticky", "1.5"], "sticky"),
    ("sticky_nan", lambda t: [*EVAL, "--sticky", "nan"], "sticky"),
    ("sticky_1_on_shadow", lambda t: [*EVAL[:3], "shadow", *EVAL[4:], "--sticky", "1"], "sticky"),
    ("serve", lambda t: [*EVAL, "--serve", "sometimes"], "serve"),
    ("protocol", lambda t: [*EVAL, "--protocol", "v4"], "protocol"),
    ("protocol_v5_other_horizon", lambda t: [*EVAL, "--protocol", "v5", "--max-steps", "1800"], "max_steps"),
    ("protocol_v5_other_sticky", lambda t: [*EVAL, "--protocol", "v5", "--sticky", "0"], "sticky"),
    ("protocol_v5_one_ball", lambda t: [*EVAL, "--protocol", "v5", "--serve", "never"], "serve"),
    ("learn_against_missing", lambda t: ["breakout", "learn", "--against", t / "gone.onnx"], "against"),
    ("learn_against_not_a_network", lambda t: ["breakout", "learn", "--against", _params_file(t, "{}")], "against"),
    (
        "learn_against_unvalidated",
        lambda t: ["breakout", "learn", "--against", _net(t), "--validate-episodes", "0"],
        "against",
    ),
    (
        "learn_protocol_v5_other_horizon",
        lambda t: ["breakout", "learn", "--protocol", "v5", "--max-steps", "900"],
        "max_steps",
    ),
    ("executor", lambda t: [*EVAL, "--executor", "slurm"], "executor"),
    ("ray_address_without_ray", lambda t: [*EVAL, "--ray-address", "127.0.0.1:9"], "ray_address"),
    ("unreachable_ray", lambda t: [*EVAL, "--executor", "ray", "--ray-address", "127.0.0.1:9"], "ray_address"),
    ("params_missing_file", lambda t: [*EVAL, "--params", t / "nope.json"], "params"),
    ("params_corrupt_json", lambda t: [*EVAL, "--params", _params_file(t, "{not json")], "params"),
    ("params_not_an_object", lambda t: [*EVAL, "--params", _params_file(t, [1, 2])], "params"),
    ("params_unknown_field", lambda t: [*EVAL, "--params", _params_file(t, _v3(bogus=1.0))], "params.bogus"),
    ("params_missing_field", lambda t: [*EVAL, "--params", _params_file(t, _v3(panic_y=None))], "params.panic_y"),
    ("params_out_of_range", lambda t: [*EVAL, "--params", _params_file(t, _v3(far_cap=99.0))], "params.far_cap"),
    ("params_not_a_number", lambda t: [*EVAL, "--params", _params_file(t, _v3(far_cap="big"))], "params.far_cap"),
    ("unknown_preset", lambda t: [*EVAL[:3], "shadow", *EVAL[4:], "--preset", "nope"], "preset"),
    (
        "preset_file_bad_field",
        lambda t: [*EVAL[:3], "shadow", *EVAL[4:], "--preset", _params_file(t, {"lives": 0})],
        "preset.lives",
    ),
    ("store_not_a_store", lambda t: [*EVAL, "--store", _params_file(t, "{}").parent], "store"),
    # audit
    ("compare_without_candidates", lambda t: [*AUDIT, "--compare-preset", "atari"], "compare_preset"),
    (
        "unknown_compare_preset",
        lambda t: [
            *AUDIT,
            "--candidates",
            _candidates(t, [{"candidate_id": c, "params": _v3()} for c in "abc"]),
            "--compare-preset",
            "nope",
        ],
        "compare_preset",
    ),
    (
        "candidates_entry_out_of_range",
        lambda t: [*AUDIT, "--candidates", _candidates(t, [{"candidate_id": "a", "params": _v3(near_y=500.0)}])],
        "candidates[0].params.near_y",
    ),
    (
        "candidates_too_few",
        lambda t: [*AUDIT, "--candidates", _candidates(t, [{"candidate_id": "a", "params": _v3()}])],
        "candidates",
    ),
    (
        "candidates_duplicate_id",
        lambda t: [*AUDIT, "--candidates", _candidates(t, [{"candidate_id": "a", "params": _v3()}] * 3)],
        "candidates[1].candidate_id",
    ),
    # train
    ("space", lambda t: ["breakout", "train", "--space", "bogus"], "space"),
    ("budget_for_grid", lambda t: ["breakout", "train", "--budget", "5"], "budget"),
    ("no_budget_for_random", lambda t: ["breakout", "train", "--space", "random"], "budget"),
    ("zero_budget", lambda t: ["breakout", "train", "--space", "random", "--budget", "0"], "budget"),
    ("objective", lambda t: ["breakout", "train", "--objective", "sideways"], "objective"),
    ("search_seeds_malformed", lambda t: ["breakout", "train", "--search-seeds", "5-1"], "search_seeds"),
    ("search_seeds_too_many", lambda t: ["breakout", "train", "--search-seeds", "1001"], "search_seeds"),
    ("schedule_past_range", lambda t: ["breakout", "train", "--search-seeds", "200"], "keep"),  # 200 x 3^3 > 1,000
    ("validation_overlaps_search", lambda t: ["breakout", "train", "--exact-seed", "4"], "exact_seed"),
    (
        "ale_validation_overlaps_search",
        lambda t: ["breakout", "train", "--preset", "atari-cal", "--validate-seed", "4"],
        "validate_seed",
    ),
    (
        "validation_overlaps_screening",
        lambda t: ["breakout", "train", "--screen-top", "3", "--screen-seed", "20000", "--exact-seed", "20001"],
        "exact_seed",
    ),
    ("confirmation_past_exact", lambda t: ["breakout", "train", "--exact-episodes", "5"], "validate_episodes"),
    ("screen_top_past_pool", lambda t: ["breakout", "train", "--screen-top", "500"], "screen_top"),
    ("baseline", lambda t: ["breakout", "train", "--baseline", "nobody"], "baseline"),
    ("train_preset", lambda t: ["breakout", "train", "--preset", "nope"], "preset"),
    ("train_ray", lambda t: ["breakout", "train", "--executor", "ray", "--ray-address", "127.0.0.1:9"], "ray_address"),
    # trace, calibrate, demo
    ("scenario", lambda t: ["breakout", "trace", "--scenario", "nope"], "scenario"),
    ("traces_missing", lambda t: ["breakout", "calibrate", "--traces", t / "missing"], "traces"),
    ("traces_empty", lambda t: ["breakout", "calibrate", "--traces", t], "traces"),
    (
        "traces_corrupt",
        lambda t: ["breakout", "calibrate", "--traces", _params_file(t, "not a zip").rename(t / "x.npz").parent],
        "traces",
    ),
    ("calibrate_base", lambda t: ["breakout", "calibrate", "--base", "no-such-preset"], "base"),
    ("demo_executor", lambda t: ["demo", "--executor", "slurm"], "executor"),
    ("demo_ray", lambda t: ["demo", "--ray-address", "127.0.0.1:9"], "ray_address"),
]


@pytest.mark.parametrize(
    "model",
    [
        requests.EvalRequest,
        requests.AuditRequest,
        requests.TransferRequest,
        requests.TrainRequest,
        requests.LearnRequest,
    ],
    ids=lambda m: m.__name__,
)
def test_protocol_v5_is_ales_standard_protocol_and_none_the_studys(model):
    """--protocol v5 fills ALE/Breakout-v5's settings (the whole game to 108,000 frames, sticky 0.25, every
    ball served), also when they are given equal; without it the study's 1,800-step episodes and the preset's
    own sticky probability."""
    base = {"out": "/nonexistent/out", "policy": "breakout_policy_v3", "env": "shadow", "episodes": 1}
    base = {k: v for k, v in base.items() if k in model.model_fields}
    v5 = model.model_validate({**base, "protocol": "v5"})
    assert (v5.max_steps, v5.sticky, getattr(v5, "serve", "auto")) == (27_000, 0.25, "auto")
    assert model.model_validate({**base, "protocol": "v5", "max_steps": 27_000, "sticky": 0.25}).max_steps == 27_000
    study = model.model_validate(base)
    assert (study.max_steps, study.sticky, study.protocol) == (1800, None, None)
    assert model.model_validate({**base, "max_steps": 500}).max_steps == 500


@pytest.mark.parametrize("case, args, field", BAD, ids=[c[0] for c in BAD])
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, capsys, case, args, field):
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    out = tmp_path / "out"
    code, stdout, stderr = run(capsys, *args(inputs), "--out", out)
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1, stderr
    assert lines[0].startswith(f"policylab: error: {field}:"), lines[0]
    assert not out.exists() and stdout == ""


def test_a_run_the_machine_cannot_hold_is_refused_up_front(tmp_path, capsys):
    out = tmp_path / "out"
    candidates = tmp_path / "candidates.json"  # only counted before the refusal: 10,000 x 3 x 100,000 episodes
    candidates.write_text(json.dumps([{"candidate_id": str(i), "params": {}} for i in range(10_000)]))
    code, _, stderr = run(
        capsys, *AUDIT, "--episodes", "100000", "--max-steps", "27000", "--candidates", candidates, "--out", out
    )
    assert code == 2, stderr
    assert stderr.startswith("policylab: error: episodes/max_steps/candidates: this run writes about")
    assert not out.exists()
    memory, disk = requests.EvalRequest(
        env="ale", policy="breakout_policy_v3", episodes=100_000, max_steps=27_000, out=out
    ).needs()
    assert disk > 100_000 * 27_000 * sizes.STORED_STEP_BYTES["ale"]  # ALE episodes as stored, alone
    small = requests.EvalRequest(env="ale", policy="breakout_policy_v3", episodes=20, out=out).needs()
    assert small[1] < 20 * 2**20 and small[0] < 2**30


def _bytes_under(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def test_the_disk_estimate_is_within_2x_of_what_the_store_takes(tmp_path, capsys):
    """Measured on a real eval: the estimate counts episodes as the store writes them (deflated), not
    their arrays in memory (which overstated a run's disk about 8x)."""
    estimate = requests.EvalRequest(
        env="ale", policy="breakout_policy_v3", episodes=8, max_steps=400, out=tmp_path / "out"
    ).needs()[1]
    code, _, stderr = run(capsys, *EVAL[:-1], "8", "--max-steps", "400", "--out", tmp_path / "out")
    assert code == 0, stderr
    written = _bytes_under(tmp_path / "out" / "store")
    assert written / 2 <= estimate <= 2 * written, (estimate, written)


def test_needs_grow_with_every_stage_of_train(tmp_path):
    base = requests.TrainRequest(out=tmp_path)
    screened = requests.TrainRequest(out=tmp_path, screen_top=8)
    ale = requests.TrainRequest(out=tmp_path, search_env="ale")
    assert base.needs()[1] < screened.needs()[1] < ale.needs()[1]
    assert (
        requests.DemoRequest(out=tmp_path).needs() == requests.TrainRequest(out=tmp_path, executor="processes").needs()
    )


def test_an_out_folder_holding_another_config_is_left_as_it_was(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "config.json").write_text('{"command": "breakout eval", "seed": 9}')
    code, _, stderr = run(capsys, *EVAL, "--max-steps", "50", "--out", out)
    assert code == 2 and stderr.startswith("policylab: error: out:") and len(stderr.strip().splitlines()) == 1
    assert [p.name for p in out.iterdir()] == ["config.json"]
    assert (out / "config.json").read_text() == '{"command": "breakout eval", "seed": 9}'
