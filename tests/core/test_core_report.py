"""Report pieces for real: a page with a chart and a video, opened in headless Chromium."""

import numpy as np

from policylab.report.browser import render_check
from policylab.report.charts import plt, save_png
from policylab.report.html import Page, Table, render
from policylab.report.video import read_mp4, write_mp4


def _chart(path):
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1, 2], [1, 3, 2])
    save_png(fig, path)


def test_png_is_deterministic(tmp_path):
    _chart(tmp_path / "a.png")
    _chart(tmp_path / "b.png")
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()


def test_mp4_keeps_frame_size(tmp_path):
    frames = np.zeros((12, 210, 160, 3), np.uint8)
    frames[:, 100:110, 50:60] = 255
    write_mp4(tmp_path / "v.mp4", frames, fps=15)
    back = read_mp4(tmp_path / "v.mp4")
    assert back.shape == (12, 210, 160, 3)
    assert back[0, 105, 55].mean() > 200 and back[0, 10, 10].mean() < 30


def test_page_renders_in_chromium_with_images(tmp_path):
    _chart(tmp_path / "chart.png")
    data = {"objective": "demo", "numbers": {"mean": 1.5}}
    (tmp_path / "report.json").write_text("{}")
    page = Page(title="Demo report", headline=[("mean", 1.5)],
                tables=[Table("rows", ["seed", "score"], [{"seed": 0, "score": 2.0}])],
                figures=[("a chart", "chart.png")])
    render(tmp_path / "report.html", page, data)
    seen = render_check(tmp_path / "report.html")
    assert seen["title"] == "Demo report"
    assert seen["images"] == 1 and seen["loaded"] == 1


def test_missing_image_is_seen_as_not_loaded(tmp_path):
    page = Page(title="Broken", figures=[("missing", "nope.png")])
    render(tmp_path / "report.html", page, {"x": 1})
    seen = render_check(tmp_path / "report.html")
    assert seen["images"] == 1 and seen["loaded"] == 0
