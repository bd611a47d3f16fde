"""Paths at the front door: a folder a command writes under is checked as the file system reaches it
(`D/missing/..` is D), an empty path is bad input, and a run stopped by bad input after claiming its
out folder removes only what it made there, never what was there before or what a link reaches."""

from __future__ import annotations

import os
from pathlib import Path

import pydantic
import pytest

from policylab.cli import invoke
from policylab.config import _names_a_path, claim_out_dir, forget_claims, release_claims
from tests.support.cli_commands import COMMANDS

SHADOW_EVAL = [
    "breakout",
    "eval",
    "--env",
    "shadow",
    "--policy",
    "breakout_policy_v3",
    "--episodes",
    "2",
    "--max-steps",
    "50",
]
ANT_SWEEP = [
    "boundary",
    "sweep",
    "--robot",
    "ant",
    "--checkpoint",
    "ant_v0",
    "--n-mu",
    "1",
    "--n-push",
    "1",
    "--seeds-per-cell",
    "1",
]


def _tree(root: Path) -> dict[str, object]:
    """Every entry under `root` (not followed through links): a file's bytes, a link's target, a folder."""
    found: dict[str, object] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(folder) / name
            rel = str(p.relative_to(root))
            found[rel] = ("link", os.readlink(p)) if p.is_symlink() else p.read_bytes() if p.is_file() else "folder"
    return found


def _project(tmp_path: Path) -> Path:
    """A non-empty folder as a user has one: files, a subfolder, a symlink."""
    d = tmp_path / "D"
    (d / "src").mkdir(parents=True)
    (d / "notes.txt").write_text("my notes\n")
    (d / "src" / "main.py").write_text("print('hi')\n")
    (d / "link").symlink_to("notes.txt")
    return d


def _garbage_store(tmp_path: Path) -> Path:
    """A store folder whose index is not a database: the eval claims its out folder, then opening the
    store is bad input (a run stopped by bad input after its claim)."""
    s = tmp_path / "S"
    s.mkdir()
    (s / "index.sqlite").write_bytes(b"not a database\n")
    return s


def _refused(capsys, argv, field: str) -> str:
    code = invoke([str(a) for a in argv])
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code == 2 and len(lines) == 1, (code, captured.out, captured.err)
    assert lines[0].startswith(f"policylab: error: {field}: "), lines[0]
    return lines[0]


@pytest.mark.parametrize("where", ["eval --out", "eval --store", "sweep --store"])
def test_a_path_through_a_missing_folder_is_the_folder_it_names(where, tmp_path, capsys):
    """`D/missing/..` does not exist as typed, but every write through it lands in D: a non-empty D is
    refused, and left byte for byte as it was (it used to be written into, then emptied when the run
    stopped on bad input)."""
    d = _project(tmp_path)
    before = _tree(d)
    through = f"{d}/missing/.."
    if where == "eval --out":
        line = _refused(capsys, [*SHADOW_EVAL, "--store", _garbage_store(tmp_path), "--out", through], "out")
    elif where == "eval --store":
        line = _refused(capsys, [*SHADOW_EVAL, "--store", through, "--out", tmp_path / "o"], "store")
    else:
        line = _refused(capsys, [*ANT_SWEEP, "--store", through, "--out", tmp_path / "o"], "store")
    assert f"{d} " in line and "missing/.." not in line  # the folder named is the one the writes would reach
    assert _tree(d) == before
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "command, field",
    [
        (c, f)
        for c, m in sorted(COMMANDS.items())
        for f, info in m.model_fields.items()
        if _names_a_path(info.annotation)
    ],
)
def test_every_path_option_refuses_an_empty_path(command, field, tmp_path, monkeypatch):
    """As a path, "" means the current folder; nobody means that by leaving the option empty."""
    monkeypatch.chdir(tmp_path)
    for blank in ("", "  "):
        with pytest.raises(pydantic.ValidationError) as exc:
            COMMANDS[command].model_validate({field: blank})
        assert [e["msg"] for e in exc.value.errors() if e["loc"] == (field,)] == [
            "Value error, is empty; give a path (. is the current folder)"
        ], (command, field, exc.value.errors())
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "argv, field",
    [
        ([*SHADOW_EVAL, "--out", ""], "out"),
        ([*SHADOW_EVAL, "--out", "o", "--store", " "], "store"),
        ([*ANT_SWEEP, "--store", "", "--out", "o"], "store"),
        (["runs", ""], "root"),
        (["store", "check", ""], "store"),
    ],
)
def test_an_empty_path_is_bad_input_and_nothing_is_written(argv, field, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert "is empty" in _refused(capsys, argv, field)
    assert list(tmp_path.iterdir()) == []


def test_a_run_stopped_after_its_claim_removes_the_folders_it_made(tmp_path, capsys):
    """--out a/b/run with a/ missing: the run made a, a/b and a/b/run, and takes all three back."""
    _refused(
        capsys, [*SHADOW_EVAL, "--store", _garbage_store(tmp_path), "--out", tmp_path / "a" / "b" / "run"], "store"
    )
    assert not (tmp_path / "a").exists()


def test_a_run_stopped_after_its_claim_empties_an_empty_folder_it_reached_through_a_link(tmp_path, capsys):
    target = tmp_path / "target"
    target.mkdir()
    (tmp_path / "link").symlink_to(target)
    _refused(capsys, [*SHADOW_EVAL, "--store", _garbage_store(tmp_path), "--out", tmp_path / "link"], "store")
    assert (tmp_path / "link").is_symlink() and list(target.iterdir()) == []


@pytest.fixture
def claims():
    forget_claims()
    yield
    forget_claims()


def test_a_link_in_a_released_folder_is_removed_as_a_link(tmp_path, claims):
    """What a run leaves in its folder may be a symlink to a folder elsewhere: releasing the claim
    removes the link, never what it points at."""
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    (elsewhere / "keep").mkdir(parents=True)
    (elsewhere / "keep" / "data.txt").write_text("precious")
    claim_out_dir(out, {"command": "test"})
    (out / "to-elsewhere").symlink_to(elsewhere)
    (out / "written.txt").write_text("the run's")
    release_claims()
    assert list(out.iterdir()) == []
    assert (elsewhere / "keep" / "data.txt").read_text() == "precious"


def test_a_claimed_folder_replaced_by_another_is_left_alone(tmp_path, claims):
    """The claim is on a folder, not a name: if the name now leads to another folder (moved aside and
    replaced, or a symlink put in its place), releasing the claim touches neither."""
    out = tmp_path / "out"
    out.mkdir()
    claim_out_dir(out, {"command": "test"})
    out.rename(tmp_path / "moved")
    out.mkdir()
    (out / "theirs.txt").write_text("someone else's")
    release_claims()
    assert (out / "theirs.txt").read_text() == "someone else's"
    forget_claims()

    claim_out_dir(tmp_path / "new", {"command": "test"})
    (tmp_path / "new").rename(tmp_path / "new-moved")
    (tmp_path / "new").symlink_to(tmp_path / "moved")
    release_claims()
    assert (tmp_path / "new").is_symlink() and (tmp_path / "moved" / "config.json").is_file()
