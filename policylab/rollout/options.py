"""The executor option group, `--executor` and `--ray-address`, declared once for every command.

For the commands on `executors.run_tasks`; light on purpose (typing and pydantic only), so `--help` loads no more."""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import Field

Executor = Literal["local", "processes", "ray"]  # executors.EXECUTORS (a test keeps them equal)
EXECUTOR_HELP = "Where the work runs: local (this process), processes (a process pool) or ray; results are identical."
MAX_RAY_ADDRESS = 500  # characters of host:port, ray://host:port or auto, with room for a long host name
RAY_ADDRESS_HELP = (
    "Address of an existing Ray cluster (host:port, ray://host:port or auto; only with --executor ray); "
    "default: a local Ray."
)

ExecutorOption = Annotated[Executor, Field(description=EXECUTOR_HELP)]
RayAddress = Annotated[Optional[str], Field(min_length=1, max_length=MAX_RAY_ADDRESS, description=RAY_ADDRESS_HELP)]
