"""The validation of a learned network (`transfer.validate_network`): the network, v3 and the search pick
on fresh breakout.transfer seeds on the exact shadow, the first of them confirmed on real ALE, paired
verdicts as the training loop decides them, the transfer gap table, the same bytes on a re-run, and a
page that renders; on a physics preset the verdicts come from ALE."""

from __future__ import annotations

import json

import pytest

from policylab.cli import invoke
from policylab.envs.breakout.ale import Protocol
from policylab.fileio import write_json
from policylab.policies.breakout_net import NetObsSpec, read
from policylab.report.browser import chromium_path, render_check
from policylab.rollout.seeds import RANGES, named_range
from policylab.stats import paired_delta
from policylab.studies.breakout.learn.transfer import gap_chart, section, validate_network, write_transfer_report
from policylab.studies.breakout.search.search_space import grid216
from policylab.studies.breakout.search.selection import verdict
from tests.support.breakout_nets import export, torch_mlp
from tests.support.paths import ROOT
from tests.support.words import blank_tiles

STEPS = 200
EPISODES, GAP, EXACT = 2, 3, 5  # ALE confirmation seeds, gap episodes, exact-shadow validation seeds


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("transfer")
    spec = NetObsSpec(history=2, wall=True)
    export(torch_mlp(spec, 0), spec, root / "net.onnx")
    pick = {**next(c for c in grid216() if c["candidate_id"] == "c129"), "source": "grid216 c129 (test)"}
    kwargs = dict(
        out=root / "out",
        episodes=EPISODES,
        gap_episodes=GAP,
        exact_episodes=EXACT,
        pick=pick,
        protocol=Protocol(max_steps=STEPS).model_dump(),
    )
    data = validate_network(root / "net.onnx", **kwargs)
    return root, data, kwargs


def test_seeds_are_fresh_and_shared_by_both_envs(run):
    _, data, _ = run
    rng = named_range("breakout", "transfer")
    seeds = data["objective"]["seeds"]
    assert seeds["validation"] == list(rng.first(EXACT)) and seeds["gap_first"] == rng.base
    assert seeds["ale_confirmation"] == list(rng.first(EPISODES))
    for (study, purpose), other in RANGES.items():
        if study == "breakout" and purpose != "transfer":
            assert not rng.overlaps(other), purpose
    assert [r["key"] for r in data["transfer_gap"]["rows"]] == ["network", "v3", "pick"]
    assert all(
        r["episodes"] == GAP and len(r["ale_scores"]) == len(r["shadow_scores"]) == GAP
        for r in data["transfer_gap"]["rows"]
    )


def test_verdicts_are_the_training_loops_on_the_evals_scores(run, tmp_path):
    """The network's validation scores are what `breakout eval` gives on the exact shadow on those seeds
    (the same store records), and its ALE scores on the confirmation seeds equal them; each comparison is
    the paired delta and verdict of the training loop on them."""
    root, data, _ = run
    store = root / "out" / "store"
    net = root / "net.onnx"
    base_seed = str(named_range("breakout", "transfer").base)
    common = ["--policy", str(net), "--seed", base_seed, "--max-steps", str(STEPS), "--store", str(store)]
    assert (
        invoke(
            [
                "breakout",
                "eval",
                "--env",
                "shadow",
                "--episodes",
                str(EXACT),
                *common,
                "--out",
                str(tmp_path / "shadow"),
            ]
        )
        == 0
    )
    shadow = json.loads((tmp_path / "shadow" / "report.json").read_text())["distribution"]["scores"]
    assert (
        invoke(
            ["breakout", "eval", "--env", "ale", "--episodes", str(EPISODES), *common, "--out", str(tmp_path / "ale")]
        )
        == 0
    )
    ale = [r["score"] for r in json.loads((tmp_path / "ale" / "report.json").read_text())["episodes"]]
    v = data["validation"]
    assert v["distributions"]["network"]["scores"] == shadow and shadow[:EPISODES] == ale
    assert (v["ale_confirmation"]["equal"], v["ale_confirmation"]["of"]) == (EPISODES, EPISODES)
    for base in ("v3", "pick"):
        other = v["distributions"][base]["scores"]
        delta = paired_delta(shadow, other)
        assert v["comparisons"][base]["paired_delta"] == delta
        assert v["comparisons"][base]["verdict"] == verdict(delta)
        assert [r[f"delta_vs_{base}"] for r in v["paired_by_seed"]] == [a - b for a, b in zip(shadow, other)]
    row = data["transfer_gap"]["rows"][0]
    assert row["shadow_scores"] == shadow[:GAP] and row["ale_scores"][:EPISODES] == ale
    if row["ratio_shadow_over_ale"] is not None:
        assert row["ratio_shadow_over_ale"] == pytest.approx(row["shadow_mean"] / row["ale_mean"])
    assert data["headlines"][0].startswith(f"network on the exact shadow ({EXACT} fresh seeds): mean ")
    assert "same verdict on a fresh set with probability" in data["headlines"][1]


def test_a_physics_preset_validates_on_ale(run):
    root, _, kwargs = run
    data = validate_network(root / "net.onnx", **{**kwargs, "preset": "atari-cal", "out": root / "physics"})
    v = data["validation"]
    assert v["env"] == "ale" and v["ale_confirmation"] is None and v["episodes"] == EPISODES
    assert v["distributions"]["network"]["scores"] == data["transfer_gap"]["rows"][0]["ale_scores"][:EPISODES]


def test_a_rerun_gives_the_same_bytes(run, tmp_path):
    root, data, kwargs = run
    again = validate_network(root / "net.onnx", **kwargs)
    write_json(tmp_path / "a.json", data)
    write_json(tmp_path / "b.json", again)
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


@pytest.mark.skipif(chromium_path() is None, reason="Chromium not installed (make setup installs it)")
def test_the_page_renders_with_the_gap_table(run):
    root, data, _ = run
    page = write_transfer_report(root / "out", data)
    seen = render_check(page)
    assert seen["images"] == 1 and seen["loaded"] == 1
    assert blank_tiles(seen["tiles"]) == [], seen["tiles"]
    html = page.read_text()
    for table in section(data).tables:
        assert table.title.replace("'", "&#39;") in html
    assert "net.onnx" in html and "search pick c129" in html and 'href="transfer.json"' in html


def test_the_search_pick_is_what_train_picks_on_its_defaults():
    """The recomputed pick is the candidate the benchmark recorded for `breakout train` on its defaults
    (`make demo`'s job)."""
    from policylab.studies.breakout.search.train import default_pick

    recorded = json.loads((ROOT / "benchmarks" / "results" / "train_loop.json").read_text())["demo_pick"][
        "candidate_id"
    ]
    pick = default_pick()
    assert pick["candidate_id"] == recorded
    assert pick["params"] == next(c for c in grid216() if c["candidate_id"] == recorded)["params"]


def _small_transfer(root) -> list[str]:
    """`breakout transfer` of the test network on 1 ALE, 2 gap and 3 exact seeds of 100 steps."""
    small = ["--episodes", "1", "--gap-episodes", "2", "--exact-episodes", "3", "--max-steps", "100"]
    return ["breakout", "transfer", "--policy", str(root / "net.onnx"), *small]


def test_the_command_validates_a_file_and_refuses_what_it_cannot(run, tmp_path, capsys):
    root, _, _ = run
    argv = _small_transfer(root)
    outs = [tmp_path / "a", tmp_path / "b"]
    for out in outs:
        assert invoke([*argv, "--out", str(out)]) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed[0].startswith("network on the exact shadow (3 fresh seeds): mean ") and printed[-1].startswith(
        "report: "
    )
    a, b = ((o / "transfer.json").read_bytes() for o in outs)
    assert a == b
    config = json.loads((outs[0] / "config.json").read_text())
    assert config["policy"] == "net.onnx" and "sha256" in config["network"] and str(root) not in json.dumps(config)
    assert invoke(["breakout", "transfer", "--policy", "breakout_policy_v3", "--out", str(tmp_path / "c")]) == 2
    assert invoke([*argv, "--seed", str(named_range("breakout", "learn").base), "--out", str(tmp_path / "d")]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert errors[0].startswith("policylab: error: policy: ") and errors[1].startswith("policylab: error: seed: ")
    assert not (tmp_path / "c").exists() and not (tmp_path / "d").exists()


def test_against_adds_a_paired_verdict_against_another_network(run, tmp_path, capsys):
    """`--against` plays a second network on the same seeds: its scores are its own eval's, the network's
    paired delta and verdict against it are the training loop's, and it joins the confirmation, the gap
    table, the paired rows and the headlines; the command records it by content."""
    root, data, kwargs = run
    spec = NetObsSpec(history=2, wall=True)
    export(torch_mlp(spec, 1), spec, tmp_path / "previous.onnx")
    four = validate_network(root / "net.onnx", **{**kwargs, "against": read(tmp_path / "previous.onnx")})
    v = four["validation"]
    assert list(v["comparisons"]) == ["v3", "pick", "against"]
    assert v["comparisons"]["against"]["against"] == "previous.onnx"
    for key in ("network", "v3", "pick"):  # the three contenders' scores are what they were without it
        assert v["distributions"][key] == data["validation"]["distributions"][key]
    mine, theirs = v["distributions"]["network"]["scores"], v["distributions"]["against"]["scores"]
    assert v["comparisons"]["against"]["paired_delta"] == paired_delta(mine, theirs)
    assert [r["delta_vs_against"] for r in v["paired_by_seed"]] == [a - b for a, b in zip(mine, theirs)]
    assert "all 4 policies" in v["ale_confirmation"]["rule"] and v["ale_confirmation"]["equal"] == EPISODES
    assert [r["key"] for r in four["transfer_gap"]["rows"]] == ["network", "v3", "pick", "against"]
    assert any(h.startswith("  vs previous.onnx: ") for h in four["headlines"])
    assert four["objective"]["against"]["sha256"] == read(tmp_path / "previous.onnx").record["sha256"]
    table = section(four).tables[2]
    assert "against_score" in table.columns and "delta_vs_against" in table.columns

    argv = [*_small_transfer(root), "--store", str(tmp_path / "store")]
    assert invoke([*argv, "--against", str(tmp_path / "previous.onnx"), "--out", str(tmp_path / "a")]) == 0
    config = json.loads((tmp_path / "a" / "config.json").read_text())
    assert "sha256" in config["against"] and "previous.onnx" not in json.dumps(config)  # by content
    (tmp_path / "bad.onnx").write_bytes(b"not a network")
    assert invoke([*argv, "--against", str(tmp_path / "bad.onnx"), "--out", str(tmp_path / "b")]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("policylab: error: against: ")
    assert not (tmp_path / "b").exists()


def test_gap_chart_of_one_episode_draws_bars_without_intervals(tmp_path):
    """`--gap-episodes 1` has no interval per row (ci95 None): the chart is still drawn, without error bars."""
    row = {"policy": "net", "shadow_mean": 12.0, "ale_mean": 9.0, "shadow_ci95": None, "ale_ci95": None}
    data = {"transfer_gap": {"rows": [row], "episodes": 1}, "objective": {"preset": "ale-exact"}}
    gap_chart(data, tmp_path / "gap.png")
    assert (tmp_path / "gap.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_two_network_files_of_one_name_are_told_apart_on_the_page(tmp_path):
    """Each learn run writes `policy.onnx`: validated against the previous run's, both would read "policy.onnx"
    in every table, verdict and headline; their sha256's first digits tell them apart (the data keys and the
    policy names the store records keep the file names)."""
    from policylab.studies.breakout.learn.transfer import contenders

    spec = NetObsSpec(history=1, wall=True)
    for run, seed in (("new", 1), ("old", 2)):
        export(torch_mlp(spec, seed), spec, tmp_path / run / "policy.onnx")
    new, old = read(tmp_path / "new" / "policy.onnx"), read(tmp_path / "old" / "policy.onnx")
    pick = {"candidate_id": "c1", "params": {}}
    labels = [c.label for c in contenders(new, pick, old)]
    assert labels[0] == f"policy.onnx ({new.sha256[:8]})" and labels[3] == f"policy.onnx ({old.sha256[:8]})"
    assert new.sha256[:8] != old.sha256[:8]
    assert [c.policy for c in contenders(new, pick, old)][::3] == ["policy.onnx", "policy.onnx"]
    assert [c.label for c in contenders(new, pick)][0] == "policy.onnx"  # one name: the file's name alone
    (tmp_path / "previous.onnx").write_bytes((tmp_path / "old" / "policy.onnx").read_bytes())
    assert contenders(new, pick, read(tmp_path / "previous.onnx"))[3].label == "previous.onnx"  # names that differ
