"""The internal-error log: written where it can be, and never left as an empty file."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile

from policylab.cli import _log_internal
from policylab.config import claim_out_dir, forget_claims

# A full disk, for real: with a file-size limit of 0 every write fails (EFBIG, which Python gets
# instead of a signal) after the file was created, exactly where ENOSPC strikes.
FULL_DISK = """
import resource, sys, tempfile
from pathlib import Path
from policylab.cli import _log_internal
from policylab.config import claim_out_dir
root = Path(sys.argv[1])
tempfile.tempdir = str(root / "tmp")
claim_out_dir(root / "out", {"command": "test"})
resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
print(_log_internal(RuntimeError("boom")))
"""


def test_a_full_disk_leaves_no_empty_log(tmp_path):
    (tmp_path / "tmp").mkdir()
    proc = subprocess.run([sys.executable, "-c", FULL_DISK, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "None"  # nowhere could hold it, and the caller says so
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["config.json"]
    assert list((tmp_path / "tmp").iterdir()) == []


def test_the_log_goes_to_the_temp_folder_when_the_out_folder_cannot_hold_it(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    forget_claims()
    try:
        claim_out_dir(tmp_path / "out", {"command": "test"})
        shutil.rmtree(tmp_path / "out")
        (tmp_path / "out").write_text("a file now: nothing can be written under it")
        log = _log_internal(RuntimeError("boom"))
    finally:
        forget_claims()
    assert log is not None and log.parent == tmp_path / "tmp"
    text = log.read_text()
    assert "RuntimeError: boom" in text and text.startswith("policylab ")
    assert [p.name for p in (tmp_path / "tmp").iterdir()] == [log.name]  # no temporary file beside it
