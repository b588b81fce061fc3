"""The queue partitions a run owns, named once: its own jobs (probe, judge, summarize,
finalize) in the partition named by the run id, so that their counts stay its progress, and
its analyses in `analysis:<run id>`. Deleting a run deletes both (`runs.service.delete_run`)."""

from __future__ import annotations

ANALYSIS_PREFIX = "analysis:"


def analysis_partition(run_id: str) -> str:
    """The partition of the run's analysis jobs."""
    return f"{ANALYSIS_PREFIX}{run_id}"


def run_partitions(run_id: str) -> tuple[str, str]:
    """Every partition of the run: its own, then its analyses'."""
    return run_id, analysis_partition(run_id)
