"""docs/boundary.md's small end-to-end block, run as written: each line in-process (`policylab.cli.invoke`)
in a fresh folder, in order; every command must succeed. It sweeps go1_v0 into one store, then go1_v0
and go1_v1 into a second with the default output folders, which a default shared by all stores refused."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
from pathlib import Path

import pytest

from policylab.cli import invoke

DOC = Path(__file__).resolve().parents[3] / "docs" / "boundary.md"
MARKER = "A small map, end to end, as written"


def documented_block() -> list[str]:
    text = DOC.read_text()
    after = text[text.index(MARKER) :]
    block = re.search(r"```bash\n(.*?)```", after, re.S).group(1)
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


@pytest.mark.slow
def test_the_documented_sequence_runs_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lines = documented_block()
    assert len(lines) >= 10 and all(line.startswith("policylab boundary ") for line in lines)
    for line in lines:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = invoke(shlex.split(line)[1:])
        assert code == 0, (line, out.getvalue(), err.getvalue())
    small = tmp_path / "runs" / "small"
    for store, name in (("store", "go1_v0"), ("store8", "go1_v0"), ("store8", "go1_v1")):
        assert (small / f"{store}-sweep-{name}" / "sweep.json").is_file()
        assert json.loads((small / f"{store}-verify-{name}" / "equivalence.json").read_text())["passed"]
    assert (small / "analysis-v0" / "report" / "report.html").is_file()
    assert json.loads((small / "analysis-v0" / "clips" / "clips.json").read_text())  # the block's grid has clips
    assert (small / "diff-v0-v1" / "report" / "report.html").is_file()
