"""`policylab breakout eval` through the real CLI: outputs, determinism, resume, bad input."""

import json
import subprocess
import sys

import pytest

from policylab.rollout.store import Store

CLI = [sys.executable, "-m", "policylab.cli", "breakout"]
SMALL = ["--policy", "breakout_policy_v3", "--episodes", "2", "--seed", "3", "--max-steps", "400"]


def cli(*args, check=True):
    proc = subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=300)
    if check:
        assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


@pytest.fixture(scope="module")
def ale_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("eval") / "ale"
    cli("eval", "--env", "ale", *SMALL, "--out", out)
    return out


def test_eval_writes_rows_replays_and_report(ale_run):
    rows = [json.loads(line) for line in (ale_run / "episodes.jsonl").read_text().splitlines()]
    assert [(r["episode"], r["seed"]) for r in rows] == [(0, 3), (1, 4)]
    for r in rows:
        assert {"score", "steps", "done", "reward_count", "first_reward_step", "paddle_abs_delta_mean",
                "paddle_abs_delta_max", "ball_abs_vx_mean", "ball_abs_vy_mean", "ball_x_range", "ball_y_range",
                "lives_start", "lives_end"} <= set(r)
        replay = (ale_run / "replays" / f"ep{r['episode']:03d}_seed{r['seed']}.jsonl").read_text().splitlines()
        assert len(replay) == r["steps"]
        assert sum(json.loads(x)["reward"] for x in replay) == r["score"]
    report = json.loads((ale_run / "report.json").read_text())
    assert report["distribution"]["scores"] == [r["score"] for r in rows]
    assert report["distribution"]["mean_ci95"][0] <= report["distribution"]["mean"] <= report["distribution"]["mean_ci95"][1]
    assert "wall_seconds" not in (ale_run / "report.json").read_text()
    with Store(ale_run / "store") as store:
        assert len(store.keys()) == 2
        rec = store.require(store.keys()[0])
        assert rec.data["protocol"] == {"action_set": "minimal", "frameskip": 4, "max_steps": 400, "serve": "auto",
                                        "sticky": 0.25}


def test_same_command_twice_gives_identical_files(ale_run, tmp_path):
    other = tmp_path / "again"
    cli("eval", "--env", "ale", *SMALL, "--out", other, "--executor", "processes")
    for name in ("episodes.jsonl", "report.json", "replays/ep001_seed4.jsonl", "figures/scores.png"):
        assert (other / name).read_bytes() == (ale_run / name).read_bytes(), name


def test_rerun_into_the_same_folder_runs_nothing_new(ale_run):
    before = Store(ale_run / "store").fingerprint()
    proc = cli("eval", "--env", "ale", *SMALL, "--out", ale_run)
    assert "ale episodes" not in proc.stderr  # no episode had to run
    assert Store(ale_run / "store").fingerprint() == before


def test_shadow_eval_uses_the_same_runner(tmp_path):
    out = tmp_path / "shadow"
    cli("eval", "--env", "shadow", "--preset", "go-v1", *SMALL, "--out", out)
    rows = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert [r["seed"] for r in rows] == [3, 4]
    with Store(out / "store") as store:
        worlds = [r.data["world"] for r in store.records()]
    assert {w["env"] for w in worlds} == {"shadow"} and {w["preset"] for w in worlds} == {"go-v1"}
    # a seed played alone equals the same seed played inside a vectorized batch
    alone = tmp_path / "alone"
    cli("eval", "--env", "shadow", "--preset", "go-v1", *SMALL[:2], "--episodes", "1", "--seed", "4",
        "--max-steps", "400", "--out", alone)
    row = json.loads((alone / "episodes.jsonl").read_text())
    assert {**row, "episode": 1} == rows[1]


def _params(tmp_path, **change):
    from policylab.policies.breakout import V3_DEFAULTS

    data = {**V3_DEFAULTS, **change}
    data = {k: v for k, v in data.items() if v is not None}
    path = tmp_path / "params.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("case,field", [
    ("unknown_policy", "policy"),
    ("unknown_param", "params.bogus"),
    ("missing_param", "params.panic_y"),
    ("out_of_range", "params.far_cap"),
    ("zero_episodes", "episodes"),
    ("negative_seed", "seed"),
    ("unknown_preset", "preset"),
])
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path, case, field):
    args = {"policy": "breakout_policy_v3", "episodes": "2", "seed": "0"}
    extra = []
    if case == "unknown_policy":
        args["policy"] = "breakout_policy_v9"
    elif case == "unknown_param":
        extra = ["--params", _params(tmp_path, bogus=1.0)]
    elif case == "missing_param":
        extra = ["--params", _params(tmp_path, panic_y=None)]
    elif case == "out_of_range":
        extra = ["--params", _params(tmp_path, far_cap=99.0)]
    elif case == "zero_episodes":
        args["episodes"] = "0"
    elif case == "negative_seed":
        args["seed"] = "-1"
    elif case == "unknown_preset":
        extra = ["--env", "shadow", "--preset", "nope"]
    env = [] if "--env" in extra else ["--env", "ale"]
    out = tmp_path / "out"
    proc = cli("eval", *env, *[x for k, v in args.items() for x in (f"--{k}", v)], *extra, "--out", out,
               check=False)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"policylab: error: {field}:"), proc.stderr
    assert not out.exists()


def test_existing_out_with_a_different_config_is_refused(ale_run):
    before = Store(ale_run / "store").fingerprint()
    proc = cli("eval", "--env", "ale", *SMALL[:-2], "--max-steps", "500", "--out", ale_run, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert proc.stderr.startswith("policylab: error: out:")
    assert Store(ale_run / "store").fingerprint() == before
