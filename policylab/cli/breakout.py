"""`policylab breakout ...` (transition: mounts the study's own typer app until its commands move here)."""

from policylab.studies.breakout.cli import app  # noqa: F401
