"""Episode videos from the store: an episode re-played with frame capture, as its own record; its outcome
must equal the plain record's, and the returned dict says whether it does."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from policylab.hashing import canonical_json
from policylab.report.video import write_mp4
from policylab.rollout.store import Store
from policylab.studies.breakout.episodes.runner import EpisodeTask, ensure_episodes, key_of

VIDEO_EVERY = 2  # agent steps per video frame: every 8th emulator frame at frameskip 4, as the original
VIDEO_FPS = 15


def episode_video(store: Store, task: EpisodeTask, out_dir: Path, name: str) -> dict:
    """Write `out_dir/name` (mp4) of the first seed of `task`; return what the report shows."""
    seed = task.seeds[0]
    plain = ensure_episodes(store, [replace(task, seeds=(seed,), capture_every=0)], executor="local", label="episode")[
        (0, seed)
    ]
    capture = replace(task, seeds=(seed,), capture_every=VIDEO_EVERY)
    rec = ensure_episodes(store, [capture], executor="local", label="video episode")[(0, seed)]
    frames = store.payload(rec.key)["frames"]
    write_mp4(out_dir / name, frames, fps=VIDEO_FPS)
    return {
        "path": name,
        "seed": seed,
        "frames": int(frames.shape[0]),
        "every_agent_steps": VIDEO_EVERY,
        "fps": VIDEO_FPS,
        "record_key": rec.key,
        "episode_record_key": key_of(task, seed),
        "outcome_matches_episode_record": canonical_json(rec.outcome) == canonical_json(plain.outcome),
    }
