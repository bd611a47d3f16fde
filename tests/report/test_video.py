"""An mp4 written and read back keeps its frames' size and content."""

import numpy as np

from policylab.report.video import read_mp4, write_mp4


def test_mp4_keeps_frame_size(tmp_path):
    frames = np.zeros((12, 210, 160, 3), np.uint8)
    frames[:, 100:110, 50:60] = 255
    write_mp4(tmp_path / "v.mp4", frames, fps=15)
    back = read_mp4(tmp_path / "v.mp4")
    assert back.shape == (12, 210, 160, 3)
    assert back[0, 105, 55].mean() > 200 and back[0, 10, 10].mean() < 30
