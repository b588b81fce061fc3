"""The operations tools: the queue's state, and a recovery pass (admins)."""

from __future__ import annotations

from valuerank.mcp.spec import ToolSpec

OPS_TOOLS = (
    ToolSpec(
        "get_job_queue_status",
        "The organisation's jobs per state, per provider and per live run; the oldest wait; "
        "whether the queue or this organisation is paused (`valuerank queue status --json`).",
        "GET",
        "/api/queue/status",
    ),
    ToolSpec(
        "trigger_recovery",
        "Admins of the default organisation: one full maintenance pass now: reap the jobs "
        "of dead workers back onto the queue, prune old jobs, recount, close stale runs. "
        "Answers the pass's record with what it did.",
        "POST",
        "/api/system/queue/maintenance/run",
        admin=True,
    ),
)
