"""The executor option group: `--executor` and `--ray-address`, declared once for every command whose
work goes through `executors.run_tasks` (the Breakout study's episodes, the boundary study's sweep).

A request lists the two fields itself (`executor: ExecutorOption = "local"`, `ray_address: RayAddress =
None`), with its own default executor, and may say in its own words where its work runs (a `Field`
description beside the default). How the two combine (an address only with ray, a cluster that answers)
is checked once, by `executors.check_executor`, in the command's plan, before anything is written.

Light on purpose (typing and pydantic only): the request modules import it, and `--help` loads no more.
"""

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
