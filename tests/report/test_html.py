"""A page with a chart, opened in headless Chromium: every image loads, a missing one is seen."""

from policylab.report.browser import render_check
from policylab.report.charts import plt, save_png
from policylab.report.html import Page, Table, render


def _chart(path):
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1, 2], [1, 3, 2])
    save_png(fig, path)


def test_page_renders_in_chromium_with_images(tmp_path):
    _chart(tmp_path / "chart.png")
    data = {"objective": "demo", "numbers": {"mean": 1.5}}
    (tmp_path / "report.json").write_text("{}")
    page = Page(
        title="Demo report",
        headline=[("mean", 1.5)],
        tables=[Table("rows", ["seed", "score"], [{"seed": 0, "score": 2.0}])],
        figures=[("a chart", "chart.png")],
    )
    render(tmp_path / "report.html", page, data)
    seen = render_check(tmp_path / "report.html")
    assert seen["title"] == "Demo report"
    assert seen["images"] == 1 and seen["loaded"] == 1


def test_missing_image_is_seen_as_not_loaded(tmp_path):
    page = Page(title="Broken", figures=[("missing", "nope.png")])
    render(tmp_path / "report.html", page, {"x": 1})
    seen = render_check(tmp_path / "report.html")
    assert seen["images"] == 1 and seen["loaded"] == 0
