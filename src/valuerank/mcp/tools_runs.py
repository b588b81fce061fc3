"""The run tools: list, start (with its cost estimate), status, pause/resume/cancel, delete."""

from __future__ import annotations

from valuerank.mcp.spec import ToolSpec

RUN_TOOLS = (
    ToolSpec(
        "list_runs",
        "The newest runs first, each with its status and progress. Filters: `status`, "
        "`definition_id`, `model`, `created_since`, `created_until`; pass `next_cursor` back "
        "as `cursor` for the next page.",
        "GET",
        "/api/runs",
        renames={"definition_id": "definition"},
    ),
    ToolSpec(
        "start_run",
        "Create a run of a definition version on `models` (`provider:model`) and start it: "
        "one probe job per scenario, model and sample. Answers its scenarios, job count and "
        "cost estimate (an unknown price is reported, never counted as free). "
        "`sample_percentage` and `sample_seed` sample the scenarios (nested: a larger sample "
        "contains a smaller one). The jobs run on the server's workers.",
        "POST",
        "/api/queue/runs",
    ),
    ToolSpec(
        "get_run_status",
        "The run's status and progress: probe jobs per state, judging, cost, ETA, error.",
        "GET",
        "/api/queue/runs/{run_id}",
    ),
    ToolSpec(
        "pause_run",
        "Stop starting the run's jobs; running ones finish, nothing is lost.",
        "POST",
        "/api/queue/runs/{run_id}/pause",
    ),
    ToolSpec(
        "resume_run",
        "Start a paused run's jobs again.",
        "POST",
        "/api/queue/runs/{run_id}/resume",
    ),
    ToolSpec(
        "cancel_run",
        "Cancel the run: queued jobs now, running ones at their next heartbeat.",
        "POST",
        "/api/queue/runs/{run_id}/cancel",
    ),
    ToolSpec(
        "delete_run",
        "Delete the run with its jobs, events, scenarios, transcripts and judgments. A run "
        "under way is refused (RUN_ACTIVE): cancel it first.",
        "DELETE",
        "/api/queue/runs/{run_id}",
    ),
)
