"""A shipped robot's spec folder copied into a test's folder, to edit its spec or its MJCF scene there."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from policylab.envs.robots.spec import SPECS_DIR


def go1_imu_copy(folder: Path, scene_edit=None, **changes) -> Path:
    """go1_imu's spec folder copied under `folder` (its meshes stay in the shipped go1 folder, linked beside
    it: go1_imu.xml reads them from ../go1/assets), its scene.xml text passed through `scene_edit`, its spec's
    top-level fields replaced by `changes`; the spec file's path."""
    specs = Path(folder) / "specs"
    shutil.copytree(SPECS_DIR / "go1_imu", specs / "go1_imu")
    (specs / "go1").symlink_to(SPECS_DIR / "go1")
    if scene_edit is not None:
        scene = specs / "go1_imu" / "scene.xml"
        scene.write_text(scene_edit(scene.read_text()))
    path = specs / "go1_imu" / "go1_imu.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))
    return path
