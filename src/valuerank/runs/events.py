"""A run's live progress as the seed names it, read from the queue's events of the run's
partition (the truth on both databases):

    {"type": "task_complete", "scenario_id", "model", "progress": "45/120", "seq": N, …}
    {"type": "task_failed", "scenario_id", "model", "error": "…", "progress", "seq", …}
    {"type": "run_complete", "status", "progress", "seq", …}

plus `run_paused`, `run_resumed`, `run_cancelled` (see runs/event_names.py; rows under the
queue's older names, `partition_paused`…, read the same). A *task* is one probe job (scenario ×
model × sample): the judge, summarize and finalize jobs of the run write events too, but they
are not tasks and `progress` does not count them; their webhooks get them as `job_complete`,
`job_failed`… (`task_*` only for probes), and the progress of a probe's webhook counts
probes. Their events still take sequence numbers, so the `seq` of consecutive messages may
jump; a client resumes after the last `seq` it saw.

`progress` is "probe jobs ended / probe jobs planned" at that event: counted from the events
themselves (ended: complete, failed, cancelled; a requeued failure counts back), so a message
is the same whenever it is read, live or replayed. The run's end is `run_complete`, written
by the queue when the run's partition has nothing queued or running any more (this module
names it, `run_completion`, one of the runs' queue hooks: runs/hooks.py), with the probe
counts of that moment; rows
written before it existed say `partition_complete`, and are read as `run_complete` too; so
does a run that maintenance closed (`run_reaped`, formerly `partition_reaped`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import run_scenarios, runs
from valuerank.queue.events import Event, EventType, events_after
from valuerank.queue.partitions import count_events, last_event, status_counts
from valuerank.runs.event_names import (
    OLD_NAMES,
    RUN_CANCELLED,
    RUN_COMPLETE,
    RUN_EVENTS,
    RUN_PAUSED,
    RUN_REAPED,
    RUN_RESUMED,
    run_event_name,
)
from valuerank.runs.kinds import FINALIZE, JUDGE, PROBE, SUMMARIZE
from valuerank.runs.progress import Progress, job_progress
from valuerank.runs.run import Run

# The run's end under every name: `partition_complete` is what rows written before
# `run_complete` existed say (and what a process that never imported this module writes).
# A run that maintenance closed (`run_reaped`, no job left to end it) ends the same way.
END_TYPES = frozenset({RUN_COMPLETE, RUN_REAPED}) | {
    old for old, new in OLD_NAMES.items() if new in (RUN_COMPLETE, RUN_REAPED)
}
TASK_COMPLETE = EventType.TASK_COMPLETE.value
TASK_FAILED = EventType.TASK_FAILED.value
# Probe events that end a probe job (+1) or bring a failed one back (-1).
_ENDED = {
    EventType.TASK_COMPLETE.value: 1,
    EventType.TASK_FAILED.value: 1,
    EventType.TASK_CANCELLED.value: 1,
    EventType.TASK_REQUEUED.value: -1,
}
_RUN_STATES = frozenset({RUN_PAUSED, RUN_RESUMED, RUN_CANCELLED})
_PROBE_PREFIX = f"{PROBE}:"


async def run_completion(
    conn: AsyncConnection, org_id: str, partition: str
) -> tuple[str, dict[str, Any]] | None:
    """A run's partition ends with `run_complete`, saying the run's status and its probe
    counts (exact, from the jobs, in the transaction that ends it)."""
    status = await conn.scalar(
        select(runs.c.status).where(runs.c.id == partition, runs.c.org_id == org_id)
    )
    if status is None:
        return None
    probes = await job_progress(conn, partition, (PROBE,))
    counted = {"done": probes.done, "total": probes.total}
    # Its progress counts probes, as every run message's does (not the finalize job).
    return RUN_COMPLETE, {"status": status, "probes": counted, **_probe_fields(probes)}


@dataclass
class ProbeTally:
    """Probe jobs ended so far (net of requeues) and planned, at some event of the run."""

    done: int = 0
    total: int = 0

    def fields(self) -> dict[str, Any]:
        done = min(max(self.done, 0), self.total)
        return {"progress": f"{done}/{self.total}", "done": done, "total": self.total}


def probe_parts(data: Mapping[str, Any]) -> tuple[str | None, str | None, int | None]:
    """(scenario id, model, sample) of a probe job's event: stored by a successful probe, else
    read from its item key `probe:<scenario>:<model>:<sample>` (model ids hold colons)."""
    scenario = data.get("scenario_id")
    model = data.get("model")
    sample: int | None = None
    key = str(data.get("item_key") or "")
    if key.startswith(_PROBE_PREFIX) and model:
        rest = key[len(_PROBE_PREFIX) :]
        marker = f":{model}:"
        at = rest.rfind(marker)
        if at >= 0:
            scenario = scenario or rest[:at]
            tail = rest[at + len(marker) :]
            sample = int(tail) if tail.isdecimal() else None
    return _text(scenario), _text(model), sample


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def is_probe(event: Event) -> bool:
    return event.data.get("kind") == PROBE


def message_of(event: Event, tally: ProbeTally) -> dict[str, Any] | None:
    """The run message of one stored event (None: not part of the run's progress), after
    counting it in `tally` (events must be given in sequence order)."""
    kind = run_event_name(str(event.type))
    base = {"type": kind, "seq": event.seq, "timestamp": event.created_at.isoformat()}
    if kind in END_TYPES:
        probes = event.data.get("probes")
        if isinstance(probes, Mapping) and isinstance(probes.get("done"), int):
            tally.done = int(probes["done"])  # exact: counted from the jobs when it was written
        end = {**base, "type": RUN_COMPLETE, **tally.fields()}
        if event.data.get("status") is not None:
            end["status"] = str(event.data["status"])
        return end
    if kind in _RUN_STATES:
        return base
    if not is_probe(event):
        return None
    tally.done += _ENDED.get(kind, 0)
    if kind not in (TASK_COMPLETE, TASK_FAILED):
        return None
    scenario, model, sample = probe_parts(event.data)
    message = {**base, "scenario_id": scenario, "model": model, "sample": sample}
    message.update(tally.fields())
    message["job_id"] = event.data.get("job_id")
    message["attempt"] = event.data.get("attempt")
    if kind == TASK_FAILED:
        message["error"] = str(event.data.get("error") or "failed (no error recorded)")
    elif event.data.get("decision_code") is not None:
        message["decision_code"] = event.data["decision_code"]
    return message


async def planned_probes(conn: AsyncConnection, run: Run) -> int:
    """Probe jobs the run plans: its scenarios × models × samples (expansion adds scenarios)."""
    scenarios = await conn.scalar(
        select(func.count()).select_from(run_scenarios).where(run_scenarios.c.run_id == run.id)
    )
    return int(scenarios or 0) * len(run.config.models) * run.config.samples_per_scenario


async def tally_at(conn: AsyncConnection, run: Run, seq: int) -> ProbeTally:
    """The tally after event `seq`, as reading events 1…seq with `message_of` would leave it:
    from the last `run_complete` up to `seq` (its exact counts), then the probe events after
    it, counted by the database."""
    last_end = await last_event(conn, run.org_id, run.id, types=sorted(END_TYPES), up_to=seq)
    done, since = 0, 0
    if last_end is not None:
        probes = (last_end.data or {}).get("probes")
        if isinstance(probes, Mapping) and isinstance(probes.get("done"), int):
            done, since = int(probes["done"]), last_end.seq
    counted = await count_events(
        conn,
        run.org_id,
        run.id,
        types=list(_ENDED),
        after=since,
        up_to=seq,
        data={"kind": PROBE},
    )
    for kind, n in counted.items():
        done += _ENDED[kind] * n
    return ProbeTally(done=done, total=await planned_probes(conn, run))


@dataclass
class RunEventReader:
    """Reads a run's messages after a cursor, batch by batch, keeping the tally."""

    run: Run
    cursor: int
    tally: ProbeTally = field(default_factory=ProbeTally)
    last_type: str | None = None  # of the last message read

    @classmethod
    async def open(cls, conn: AsyncConnection, run: Run, after: int) -> RunEventReader:
        return cls(run, after, await tally_at(conn, run, after))

    async def read(self, conn: AsyncConnection, limit: int) -> tuple[list[dict[str, Any]], int]:
        """The messages of the next `limit` stored events, and how many events were read
        (`limit`: there may be more)."""
        batch = await events_after(conn, self.run.id, self.cursor, limit, org_id=self.run.org_id)
        self.tally.total = await planned_probes(conn, self.run)
        messages = []
        for event in batch:
            message = message_of(event, self.tally)
            self.cursor = event.seq
            if message is not None:
                messages.append(message)
                self.last_type = message["type"]
        return messages, len(batch)


def webhook_topics() -> list[str]:
    """Every topic a webhook may subscribe to: the queue's event types, a run's end, and the
    maintenance schedule's alerts."""
    from valuerank.queue.maintenance_schedule import ALERT_TOPIC  # the webhook routes only

    return [*(t.value for t in EventType), *RUN_EVENTS, *STEP_EVENTS.values(), ALERT_TOPIC]


# The pipeline's kinds that are steps, not tasks (a task is one probe). Literal names for the
# analyses and validations: importing their modules here would load the pipeline.
STEP_KINDS = frozenset(
    {
        JUDGE,
        SUMMARIZE,
        FINALIZE,
        "analyze:basic",
        "analyze:deep",
        "analyze:compare",
        "summarize:analysis",
        "validate",
    }
)
# The queue's job events and what a step's are published as.
STEP_EVENTS = {
    t.value: t.value.replace("task_", "job_", 1) for t in EventType if t.value.startswith("task_")
}
_PROGRESS_FIELDS = ("progress", "done", "total", "counts")


def _probe_fields(probes: Progress) -> dict[str, Any]:
    """The progress fields of an event, counting probe jobs (`runs.progress.Progress`)."""
    counts = {
        "queued": probes.queued,
        "running": probes.running,
        "succeeded": probes.completed,
        "failed": probes.failed,
        "cancelled": probes.cancelled,
    }
    return {
        "progress": f"{probes.done}/{probes.total}",
        "done": probes.done,
        "total": probes.total,
        "counts": counts,
    }


async def publish_run_events(
    conn: AsyncConnection, org_id: str, partition: str, type: str, data: dict[str, Any]
) -> tuple[str, dict[str, Any]] | None:
    """What webhooks get of the pipeline's job events: a step's are `job_*` (without the
    partition's job counts), a probe's progress counts the run's probes."""
    kind = data.get("kind")
    if type in STEP_EVENTS and kind in STEP_KINDS:
        return STEP_EVENTS[type], {k: v for k, v in data.items() if k not in _PROGRESS_FIELDS}
    if kind == PROBE and "counts" in data:
        # The event's counts minus the run's other jobs (few, read through the kind index);
        # they do not move while its probes do, so this is the probes' count at the event.
        others = await status_counts(conn, partition, other_than_kind=PROBE)
        counts = Counter({str(k): int(n) for k, n in dict(data["counts"]).items()})
        counts.subtract(others)
        return type, {**data, **_probe_fields(Progress.of(counts))}
    return None


def log_entry(event: Event, tally: ProbeTally) -> tuple[str, dict[str, Any]]:
    """The type and data of a run's stored event in its event log, after counting it in
    `tally` (events in sequence order): current names (old rows too), a step's job events as
    `job_*` without job counts, and progress counting probes, as the run's messages do."""
    message = message_of(event, tally)
    name = run_event_name(str(event.type))
    data = dict(event.data)
    kind = data.get("kind")
    if name in STEP_EVENTS and kind in STEP_KINDS:
        return STEP_EVENTS[name], {k: v for k, v in data.items() if k not in _PROGRESS_FIELDS}
    if "progress" in data and (kind == PROBE or name in END_TYPES):
        # The partition's counts include the run's other jobs: the probes' say it here.
        data = {k: v for k, v in data.items() if k != "counts" or name in END_TYPES}
        data.update(tally.fields() if message is None else _fields_of(message))
    return name, data


def _fields_of(message: Mapping[str, Any]) -> dict[str, Any]:
    return {k: message[k] for k in ("progress", "done", "total") if k in message}
