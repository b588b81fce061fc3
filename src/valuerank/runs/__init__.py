"""Runs: a definition version's scenarios sent to models, as durable queue jobs."""

# A run's partition ends with `run_complete`: the name is given to the queue on import, so
# every process that moves a run's jobs (worker, API, CLI) writes it.
from valuerank.runs import events as _events  # noqa: F401

# A run keeps its counts and failures when maintenance prunes its jobs: the observer is given
# to the queue on import, so every process that prunes (worker, API, CLI) keeps them.
from valuerank.runs import pruned as _pruned  # noqa: F401
