"""Reports open in headless Chromium with every image loaded; the eval video is real and linked."""

import json

import pytest

from policylab.cli import invoke
from policylab.report.browser import chromium_path, render_check
from policylab.report.video import read_mp4

needs_chromium = pytest.mark.skipif(chromium_path() is None, reason="Chromium not installed (make setup installs it)")


def cli(*args) -> None:
    assert invoke(["breakout", *map(str, args)]) == 0


@needs_chromium
@pytest.mark.parametrize("env", ["ale", "shadow"])
def test_eval_report_renders_with_video(tmp_path, env):
    out = tmp_path / env
    cli(
        "eval",
        "--env",
        env,
        "--policy",
        "breakout_policy_v3",
        "--episodes",
        "2",
        "--seed",
        "0",
        "--max-steps",
        "240",
        "--video",
        "--out",
        out,
    )
    report = json.loads((out / "report.json").read_text())
    video = report["video"]
    assert video["outcome_matches_episode_record"] is True
    frames = read_mp4(out / video["path"])
    assert frames.shape[1:] == (210, 160, 3) and frames.shape[0] == video["frames"]
    assert frames.max() > 0, "the video shows the game, not a black screen"
    html = (out / "report.html").read_text()
    assert f'<video src="{video["path"]}"' in html and 'href="report.json"' in html
    seen = render_check(out / "report.html")
    assert seen["images"] >= 2 and seen["loaded"] == seen["images"]


@needs_chromium
def test_audit_report_renders(tmp_path):
    out = tmp_path / "audit"
    cli("audit", "--policy", "breakout_policy_v3", "--episodes", "2", "--max-steps", "240", "--out", out)
    seen = render_check(out / "audit.html")
    assert seen["images"] == 2 and seen["loaded"] == 2
    html = (out / "audit.html").read_text()
    for section in ("objective", "comparison", "gap_audit", "decision", "evidence"):
        assert f'id="{section}"' in html


@needs_chromium
def test_a_summarised_eval_report_stays_small_and_renders(tmp_path):
    from policylab.studies.breakout.episodes.report import EMBED_EPISODES_MAX

    out = tmp_path / "large"
    cli(
        "eval",
        "--env",
        "shadow",
        "--policy",
        "breakout_policy_v3",
        "--episodes",
        EMBED_EPISODES_MAX + 1,
        "--max-steps",
        "3",
        "--out",
        out,
    )
    seen = render_check(out / "report.html")
    assert seen["images"] == 2 and seen["loaded"] == 2
    assert seen["dom_chars"] < 60_000
    html = (out / "report.html").read_text()
    assert 'id="episodes_summary"' in html and "lowest scores" in html
