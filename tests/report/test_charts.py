"""Charts are deterministic PNGs: the same figure twice is the same bytes."""

from policylab.report.charts import plt, save_png


def _chart(path):
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1, 2], [1, 3, 2])
    save_png(fig, path)


def test_png_is_deterministic(tmp_path):
    _chart(tmp_path / "a.png")
    _chart(tmp_path / "b.png")
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()
