"""Replays, clips and .rrd files come from the record: real MuJoCo renders of stored qpos, each
clip's outcome equal to its record's, and the equivalence check of the replay batch; the clips' progress
counts each distinct clip as it is written."""

from __future__ import annotations

import json

import mujoco
import numpy as np
import pytest

from policylab.report.video import read_mp4
from policylab.rollout.store import Store
from policylab.studies.boundary.clips import distinct_clips, render_batch, render_clips
from policylab.studies.boundary.reduce import load_sweep, reduce_sweep
from policylab.studies.boundary.replay import replay_batch, resimulate_with
from policylab.studies.boundary.select import select
from tests.support.boundary_fixtures import ANT, ANT_XML, cli, make_sweep, pd_checkpoint, relabelled_copy


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    """A real sweep, analysed through the CLI: reduce, select, replay, clips, rrd."""
    base = tmp_path_factory.mktemp("clips")
    make_sweep(base, "pd_soft", (0.65, 1.0), 2, (50, 300), 3, 4)
    out = base / "ana"
    for args, report in (
        (("reduce", "--store", base / "store", "--checkpoint", "pd_soft", "--out", out), "reduce.json"),
        (("select", "--out", out, "--n-boundary", "4"), "select/selection.json"),
        (("replay", "--out", out, "--checkpoint", base / "checkpoints" / "pd_soft.npz"), "replay/replays.json"),
        (("clips", "--out", out, "--width", "96", "--height", "72"), "clips/clips.json"),
        (("rrd", "--out", out), "rrd/rrd.json"),
    ):
        res = cli(*args)
        assert res.returncode == 0, (args[0], res.stderr)
        assert res.report == out / report
    return base


def test_every_clip_outcome_equals_its_record(analysed):
    clips = json.loads((analysed / "ana" / "clips" / "clips.json").read_text())
    replays = json.loads((analysed / "ana" / "replay" / "replays.json").read_text())["replays"]
    assert len(clips) == sum(1 for r in replays if "key" in r) > 0
    with Store(analysed / "store") as store:
        for c in clips:
            rec = store.require(c["key"])
            assert c["outcome"] == rec.outcome["status"]
            assert c["t_fail"] == rec.outcome["t_fail"]
            assert c["payload_sha256"] == rec.payload_sha256
            assert c["consistent"] and c["frames_show"] == c["outcome"]
            frames = read_mp4(analysed / "ana" / "clips" / c["file"])
            assert frames.shape[0] == c["frames"] and frames.shape[1:] == (72, 288, 3)
            assert frames.std() > 5 and np.abs(frames[-1].astype(int) - frames[0]).mean() > 0.5


def test_clip_check_catches_a_wrong_label(tmp_path):
    """Clips of a failed and a survived record are consistent; the same failed trajectory under a
    wrong 'survived' label is rendered but flagged: its frames show the fall."""
    with Store(make_sweep(tmp_path, "pd_soft", (1.0, 1.0), 1, (20, 300), 2, 2)) as store:
        recs = {r.outcome["status"]: r for r in store.records("boundary")}
        assert set(recs) >= {"failed", "survived"}
        model = mujoco.MjModel.from_xml_path(ANT_XML)
        todo = [
            {"key": recs[s].key, "cache_key": recs[s].data["world"]["cache_key"], "kind": s}
            for s in ("failed", "survived")
        ]
        good = render_clips(store, model, todo, tmp_path / "c1", width=64, height=48, fps=20)
        assert [(c["frames_show"], c["consistent"]) for c in good] == [("failed", True), ("survived", True)]
        assert good[0]["frames"] > good[1]["frames"]  # the failure is shown in 4x slow motion
        new = relabelled_copy(store, "pd_soft", {recs["failed"].key: "survived"})
        wrong = [{"key": new[recs["failed"].key], "cache_key": "relabelled", "kind": "relabelled"}]
        (bad,) = render_clips(store, model, wrong, tmp_path / "c2", width=64, height=48, fps=20)
        assert bad["outcome"] == "survived" and bad["frames_show"] == "failed" and not bad["consistent"]


def test_progress_counts_each_distinct_clip_as_it_is_written(tmp_path):
    """The bar counted 10/10 at 168.8 clips/s for 11 clips that took 58 s: its total counted distinct worlds, the
    headline entries, and with workers it moved once per worker's whole share (with one worker, never). Now
    both count distinct clips, and the count moves by one per clip in either case."""
    root = make_sweep(tmp_path, "pd_soft", (1.0, 1.0), 1, (20, 300), 2, 2)
    with Store(root) as store:
        recs = list(store.records("boundary"))[:3]
    todo = [{"key": r.key, "cache_key": r.data["world"]["cache_key"], "kind": "boundary"} for r in recs]
    todo.append({**todo[0], "kind": "recovery"})  # a world selected twice is one clip
    assert distinct_clips(todo) == 3
    for workers in (1, 2):
        calls: list[int] = []
        out = tmp_path / f"workers{workers}"
        entries = render_batch(root, ANT, todo, out, width=64, height=48, fps=20, workers=workers, on_done=calls.append)
        assert calls == [1, 1, 1], workers
        assert [e["kind"] for e in entries] == ["boundary"] * 3 + ["recovery"]
        assert len(list(out.glob("*.mp4"))) == 3


def test_replay_reads_the_store_and_checks_equivalence(analysed):
    with Store(analysed / "store") as store:
        reduction = reduce_sweep(store, load_sweep(store, "pd_soft"), resamples=200, seed=0, check_rule=False)
        sel = select(reduction, n_boundary=3, n_recoveries=2)
        same = replay_batch(store, sel, resimulate_with(analysed / "checkpoints" / "pd_soft.npz", ANT))
        assert same["equivalence_summary"]["checked"] > 0
        assert same["equivalence_summary"]["bitwise_equal"] == same["equivalence_summary"]["checked"]
        for e in same["replays"]:
            if "key" in e:
                assert e["outcome"] == store.require(e["key"]).outcome["status"]
        for e in (e for e in same["replays"] if e["kind"] == "recovery"):
            assert e["recovery_attempts"] == 1 and e["matched_recorded_survivor"]
        # re-simulating with another controller is a different world: the check reports it and a
        # recovery is accepted only where a record is reproduced
        other = replay_batch(store, sel, resimulate_with(pd_checkpoint(analysed / "other", "pd_limp"), ANT))
        assert other["equivalence_summary"]["bitwise_equal"] < other["equivalence_summary"]["checked"]
        for e in (e for e in other["replays"] if e["kind"] == "recovery"):
            assert all(not a["usable"] for a in e["search"][:-1])
            assert "recovery_search" in e or e["search"][-1]["equivalence"]["equal"]
        assert other["replays"][0]["outcome"] == same["replays"][0]["outcome"]  # outcomes stay the record's


def test_rrd_files_are_written_from_the_record(analysed):
    from rerun.chunk import RrdReader

    entries = json.loads((analysed / "ana" / "rrd" / "rrd.json").read_text())
    sizes = json.loads((analysed / "ana" / "rrd" / "rrd-files.json").read_text())["files"]
    assert entries
    with Store(analysed / "store") as store:
        for e in entries:
            path = analysed / "ana" / "rrd" / e["rrd_file"]
            assert path.stat().st_size == sizes[e["rrd_file"]] > 20_000
            reader = RrdReader(path)
            (rec,) = reader.recordings()
            assert rec.recording_id == e["cache_key"]
            summary = str(reader.store().summary())
            for geom in ("torso_geom", "left_ankle_geom", "floor"):
                assert f"/world/geoms/{geom} rows=1 static=True" in summary
            assert "/tracks/torso_z rows=101" in summary
            saved = np.load(path.with_name(e["qpos_file"]))
            stored = store.payload(e["key"])
            assert saved["qpos"].tobytes() == stored["qpos"].tobytes()
            assert saved["outcome"].item() == store.require(e["key"]).outcome["status"] == e["outcome"]


def test_rrd_content_is_a_function_of_the_record(analysed, tmp_path, monkeypatch):
    """A second export of a record, with rerun's batcher told by its environment to flush every
    millisecond and every row, holds the same chunks (boundaries, columns, values) as the first: only
    rerun's chunk and row ids differ."""
    from rerun.chunk import RrdReader

    from policylab.studies.boundary.clips import analysis_robot
    from policylab.studies.boundary.rrd import export_rrd

    monkeypatch.setenv("RERUN_FLUSH_TICK_SECS", "0.001")
    monkeypatch.setenv("RERUN_FLUSH_NUM_ROWS", "1")
    e = json.loads((analysed / "ana" / "rrd" / "rrd.json").read_text())[0]
    rob = analysis_robot(analysed / "ana")
    with Store(analysed / "store") as store:
        export_rrd(store, rob, rob.render_model(), e["key"], tmp_path / "again.rrd")

    def chunks(path):
        out = []
        for c in RrdReader(path).stream().to_chunks():
            rb = c.to_record_batch()
            data = rb.drop_columns([f.name for f in rb.schema if f.name == "rerun.controls.RowId"])
            out.append((c.entity_path, c.is_static, data.to_pydict()))
        return sorted(out, key=repr)

    assert chunks(analysed / "ana" / "rrd" / e["rrd_file"]) == chunks(tmp_path / "again.rrd")


def test_replay_cli_verifies_against_the_record(analysed, tmp_path):
    replays = json.loads((analysed / "ana" / "replay" / "replays.json").read_text())
    eq = replays["equivalence_summary"]
    assert eq["checked"] > 0 and eq["bitwise_equal"] == eq["checked"]
    # a checkpoint other than the sweep's is refused before anything is written
    res = cli("replay", "--out", analysed / "ana", "--checkpoint", pd_checkpoint(tmp_path, "pd_limp"))
    assert res.returncode == 2 and res.stderr.startswith("policylab: error: checkpoint:")
    assert json.loads((analysed / "ana" / "replay" / "replays.json").read_text()) == replays


def test_clips_bad_input_writes_nothing(analysed, tmp_path):
    res = cli("clips", "--out", analysed / "ana", "--width", "5")
    assert res.returncode == 2
    assert res.stderr.strip() == "policylab: error: width: Input should be greater than or equal to 32, got '5'"
    res = cli("clips", "--out", tmp_path / "none")
    assert res.returncode == 2 and res.stderr.strip() == (
        f"policylab: error: out: {tmp_path / 'none' / 'reduce.json'} not found; run `policylab boundary reduce` first"
    )
    assert not (tmp_path / "none").exists()
    # an analysis folder without replays: the line names the stage to run first
    (tmp_path / "ana").mkdir()
    for name in ("config.json", "reduce.json"):
        (tmp_path / "ana" / name).write_bytes((analysed / "ana" / name).read_bytes())
    res = cli("rrd", "--out", tmp_path / "ana")
    assert res.returncode == 2 and res.stderr.strip().endswith("run `policylab boundary replay` first")
    assert sorted(p.name for p in (tmp_path / "ana").iterdir()) == ["config.json", "reduce.json"]
    # a re-run with another config is refused, and the clips stay as they were
    before = (analysed / "ana" / "clips" / "clips.json").read_bytes()
    res = cli("clips", "--out", analysed / "ana", "--width", "64", "--height", "48")
    assert res.returncode == 2 and "different config" in res.stderr
    assert (analysed / "ana" / "clips" / "clips.json").read_bytes() == before
