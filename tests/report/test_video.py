"""An mp4 written and read back keeps its frames' size and content; it is readable by others (0644) like
every other output."""

import os

import numpy as np

from policylab.report.video import read_mp4, write_mp4


def test_mp4_keeps_frame_size(tmp_path):
    frames = np.zeros((12, 210, 160, 3), np.uint8)
    frames[:, 100:110, 50:60] = 255
    write_mp4(tmp_path / "v.mp4", frames, fps=15)
    back = read_mp4(tmp_path / "v.mp4")
    assert back.shape == (12, 210, 160, 3)
    assert back[0, 105, 55].mean() > 200 and back[0, 10, 10].mean() < 30


def test_mp4_is_written_0644(tmp_path):
    """mkstemp's temporary file is 0600 and the rename keeps its mode: a served clip was unreadable to others."""
    old = os.umask(0o022)
    try:
        write_mp4(tmp_path / "v.mp4", np.zeros((2, 16, 16, 3), np.uint8), fps=15)
    finally:
        os.umask(old)
    assert os.stat(tmp_path / "v.mp4").st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["v.mp4"]  # no temporary file left beside it
