"""Studies: pipelines of stages (plan, run, reduce, decide, report) over the store."""
