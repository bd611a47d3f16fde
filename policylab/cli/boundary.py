"""`policylab boundary ...` (transition: mounts the study's own typer app until its commands move here)."""

from policylab.studies.boundary.cli import app  # noqa: F401
