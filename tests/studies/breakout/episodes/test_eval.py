"""`policylab breakout eval` through the CLI (in-process): outputs, determinism, resume, bad input,
replays as an export of the first K episodes, and report.json's summary of a large run."""

import json

import numpy as np
import pytest

from policylab.cli import invoke
from policylab.rollout.store import Store
from policylab.studies.breakout.episodes.report import BAR_CHART_MAX, EMBED_EPISODES_MAX

SMALL = ["--policy", "breakout_policy_v3", "--episodes", "2", "--seed", "3", "--max-steps", "400"]


def cli(*args) -> None:
    assert invoke(["breakout", *map(str, args)]) == 0


@pytest.fixture(scope="module")
def ale_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("eval") / "ale"
    cli("eval", "--env", "ale", *SMALL, "--replays", "2", "--out", out)
    return out


def test_eval_writes_rows_replays_and_report(ale_run):
    rows = [json.loads(line) for line in (ale_run / "episodes.jsonl").read_text().splitlines()]
    assert [(r["episode"], r["seed"]) for r in rows] == [(0, 3), (1, 4)]
    for r in rows:
        assert {
            "score",
            "steps",
            "done",
            "reward_count",
            "first_reward_step",
            "paddle_abs_delta_mean",
            "paddle_abs_delta_max",
            "ball_abs_vx_mean",
            "ball_abs_vy_mean",
            "ball_x_range",
            "ball_y_range",
            "lives_start",
            "lives_end",
        } <= set(r)
        replay = (ale_run / "replays" / f"ep{r['episode']:03d}_seed{r['seed']}.jsonl").read_text().splitlines()
        assert len(replay) == r["steps"]
        assert sum(json.loads(x)["reward"] for x in replay) == r["score"]
    report = json.loads((ale_run / "report.json").read_text())
    assert report["distribution"]["scores"] == [r["score"] for r in rows]
    assert (
        report["distribution"]["mean_ci95"][0]
        <= report["distribution"]["mean"]
        <= report["distribution"]["mean_ci95"][1]
    )
    assert "wall_seconds" not in (ale_run / "report.json").read_text()
    with Store(ale_run / "store") as store:
        assert len(store.keys()) == 2
        rec = store.require(store.keys()[0])
        assert rec.data["protocol"] == {
            "action_set": "minimal",
            "frameskip": 4,
            "max_steps": 400,
            "serve": "auto",
            "sticky": 0.25,
        }


def test_the_last_stdout_line_names_the_report(ale_run, capsys):
    cli("eval", "--env", "ale", *SMALL, "--replays", "2", "--out", ale_run)
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1] == f"report: {ale_run / 'report.html'}"
    # the mean and its interval, with what they were measured on, before it
    d = json.loads((ale_run / "report.json").read_text())["distribution"]
    lo, hi = d["mean_ci95"]
    assert lines[-2] == (
        f"breakout_policy_v3 (defaults) on ALE Breakout: mean score {d['mean']:.2f}, 95% CI "
        f"[{lo:.2f}, {hi:.2f}] over 2 episodes (seeds 3..4)"
    )


def test_a_params_file_names_the_policy_on_the_page_and_in_the_index(tmp_path):
    """An eval of the search's pick and one of v3's defaults must not read alike: the page title, report.json
    and the runs index name the parameters a --params file changed."""
    params = tmp_path / "pick.json"
    params.write_text(
        json.dumps(
            {
                "params": {
                    "far_cap": 10.0,
                    "near_cap": 16.0,
                    "base_deadzone": 3.0,
                    "near_y": 170.0,
                    "far_lead": 2.0,
                    "near_lead": 1.0,
                    "far_deadzone": 2.0,
                    "near_deadzone": 1.0,
                    "panic_y": 180.0,
                }
            }
        )
    )
    out = tmp_path / "runs" / "pick"
    cli(
        "eval",
        "--env",
        "shadow",
        "--policy",
        "breakout_policy_v3",
        "--params",
        params,
        "--episodes",
        1,
        "--max-steps",
        30,
        "--out",
        out,
    )
    label = "breakout_policy_v3, --params far_cap=10, near_y=170 (others default)"
    assert json.loads((out / "report.json").read_text())["measured"] == {
        "policy": label,
        "env": "shadow Breakout (ale-exact)",
    }
    assert f"<title>{label} on shadow Breakout (ale-exact)" in (out / "report.html").read_text()
    assert invoke(["runs", str(tmp_path / "runs")]) == 0
    (row,) = json.loads((tmp_path / "runs" / "index.json").read_text())["rows"]
    assert dict(row["headline"])["policy"] == label and "mean score on shadow Breakout (ale-exact)" in dict(
        row["headline"]
    )


def test_same_command_twice_gives_identical_files(ale_run, tmp_path):
    other = tmp_path / "again"
    cli("eval", "--env", "ale", *SMALL, "--replays", "2", "--out", other, "--executor", "processes")
    for name in ("episodes.jsonl", "report.json", "replays/ep001_seed4.jsonl", "figures/scores.png"):
        assert (other / name).read_bytes() == (ale_run / name).read_bytes(), name


def test_rerun_into_the_same_folder_runs_nothing_new(ale_run, capsys):
    before = Store(ale_run / "store").fingerprint()
    mtimes = {p: p.stat().st_mtime_ns for p in (ale_run / "store" / "units").glob("*.pack")}
    cli("eval", "--env", "ale", *SMALL, "--replays", "2", "--out", ale_run)
    assert "2 in the store, 0 to run" in capsys.readouterr().err
    assert Store(ale_run / "store").fingerprint() == before  # same rows, same payload hashes
    assert mtimes and {p: p.stat().st_mtime_ns for p in mtimes} == mtimes  # no payload file rewritten


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
    cli(
        "eval",
        "--env",
        "shadow",
        "--preset",
        "go-v1",
        *SMALL[:2],
        "--episodes",
        "1",
        "--seed",
        "4",
        "--max-steps",
        "400",
        "--out",
        alone,
    )
    row = json.loads((alone / "episodes.jsonl").read_text())
    assert {**row, "episode": 1} == rows[1]


def test_shadow_eval_defaults_to_the_exact_preset(tmp_path):
    out = tmp_path / "exact"
    cli("eval", "--env", "shadow", *SMALL[:2], "--episodes", "1", "--max-steps", "50", "--out", out)
    assert json.loads((out / "report.json").read_text())["objective"]["preset"] == "ale-exact"


def test_existing_out_with_a_different_config_is_refused(ale_run, capsys):
    before = Store(ale_run / "store").fingerprint()
    code = invoke(
        ["breakout", "eval", "--env", "ale", *SMALL[:-2], "--max-steps", "500", "--replays", "2", "--out", str(ale_run)]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == [err.strip()]
    assert err.startswith("policylab: error: out:")
    assert Store(ale_run / "store").fingerprint() == before


def test_replays_export_the_first_k_episodes_from_the_store(tmp_path):
    out = tmp_path / "k"
    cli(
        "eval",
        "--env",
        "shadow",
        *SMALL[:2],
        "--episodes",
        "3",
        "--seed",
        "3",
        "--max-steps",
        "120",
        "--replays",
        "1",
        "--out",
        out,
    )
    assert sorted(p.name for p in (out / "replays").iterdir()) == ["ep000_seed3.jsonl"]
    report = json.loads((out / "report.json").read_text())
    with Store(out / "store") as store:
        assert len(store.keys()) == 3  # every trajectory is recorded, exported or not
        arrays = store.payload(report["episodes"][0]["key"])
        for row in report["episodes"][1:]:
            assert store.payload(row["key"])["reward"].size == row["steps"]
    lines = [json.loads(x) for x in (out / "replays" / "ep000_seed3.jsonl").read_text().splitlines()]
    assert [r["step"] for r in lines] == list(range(1, arrays["reward"].size + 1))
    assert [r["action"] for r in lines] == arrays["action"].tolist()
    assert [r["ball_x"] for r in lines] == arrays["obs"][1:, 0].astype(float).tolist()
    # the default writes none
    plain = tmp_path / "none"
    cli(
        "eval",
        "--env",
        "shadow",
        *SMALL[:2],
        "--episodes",
        "3",
        "--seed",
        "3",
        "--max-steps",
        "120",
        "--store",
        out / "store",
        "--out",
        plain,
    )
    assert not (plain / "replays").exists()
    assert (plain / "episodes.jsonl").read_bytes() == (out / "episodes.jsonl").read_bytes()


def test_more_replays_than_episodes_is_bad_input(tmp_path, capsys):
    code = invoke(["breakout", "eval", "--env", "shadow", *SMALL, "--replays", "3", "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("policylab: error: replays:") and "--episodes" in err
    assert not (tmp_path / "x").exists()


def test_a_large_eval_is_summarised_in_report_json(tmp_path):
    n = EMBED_EPISODES_MAX + 1
    out = tmp_path / "large"
    cli("eval", "--env", "shadow", *SMALL[:2], "--episodes", n, "--seed", "0", "--max-steps", "3", "--out", out)
    assert n > BAR_CHART_MAX
    rows = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(rows) == n
    report = json.loads((out / "report.json").read_text())
    assert "episodes" not in report
    dist, summary = report["distribution"], report["episodes_summary"]
    assert "scores" not in dist and dist["count"] == n
    assert set(dist["score_quantiles"]) == {"p01", "p05", "p25", "p50", "p75", "p95", "p99"}
    assert sum(dist["score_histogram"]["counts"]) == n
    assert len(dist["score_histogram"]["bin_edges"]) == len(dist["score_histogram"]["counts"]) + 1
    assert dist["mean"] == pytest.approx(np.mean([r["score"] for r in rows]))
    assert summary["count"] == n and summary["embedded_max"] == EMBED_EPISODES_MAX
    assert [r["episode"] for r in summary["first"]] == list(range(10))
    lowest = sorted(rows, key=lambda r: (r["score"], r["episode"]))[:10]
    assert [(r["episode"], r["score"]) for r in summary["lowest_scores"]] == [
        (r["episode"], r["score"]) for r in lowest
    ]
    assert set(summary["feature_quantiles"]) >= {"steps", "reward_count", "ball_abs_vx_mean"}
    with Store(out / "store") as store:  # the rows' keys name their records
        assert store.require(summary["first"][3]["key"]).outcome["steps"] == rows[3]["steps"]
    assert (out / "report.json").stat().st_size < 20_000
    assert (out / "report.html").stat().st_size < 40_000
