"""The boundary study's older records, read in one place: what a stored sweep, a reduction or a rollout
record that lacks a field means by its absence.

- A sweep's meta, or a reduction of it, that records no robot is the Ant's: the study's only robot when
  such stores were written (`UNRECORDED_ROBOT`; `recorded_robot`, `reduced_robot_ref`). A command given
  no --robot uses the default robot instead (envs/robots/spec.py).
- A diverged outcome that names no cause diverged on its states: the only cause there was when it was
  recorded (`UNRECORDED_DIVERGED_CAUSE`, read by `records.diverged_cause`).

Worlds keyed in a former form are not here: a boundary world's key version names its meaning, so a
record of another version is not reused (docs/design.md, "Key versions"). Light: no numpy at import.
"""

from __future__ import annotations

UNRECORDED_ROBOT = "ant"
UNRECORDED_DIVERGED_CAUSE = "state"


def recorded_robot(meta: dict) -> dict:
    """The robot a sweep's meta records (its ``ref`` and identity), or `UNRECORDED_ROBOT` when it records none."""
    return meta.get("robot") or {"ref": UNRECORDED_ROBOT}


def reduced_robot_ref(reduction: dict) -> str:
    """The robot reference of the sweep a reduction read (`UNRECORDED_ROBOT` when it records none)."""
    return reduction["sweep"].get("robot", UNRECORDED_ROBOT)
