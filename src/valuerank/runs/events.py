"""A run's live progress as the seed names it, read from the queue's events of the run's
partition (the truth on both databases):

    {"type": "task_complete", "scenario_id", "model", "progress": "45/120", "seq": N, …}
    {"type": "task_failed", "scenario_id", "model", "error": "…", "progress", "seq", …}
    {"type": "run_complete", "status", "progress", "seq", …}

plus `run_paused`, `run_resumed`, `run_cancelled`. A *task* is one probe job (scenario ×
model × sample): the judge, summarize and finalize jobs of the run write events too, but they
are not tasks and `progress` does not count them. Their events still take sequence numbers,
so the `seq` of consecutive messages may jump; a client resumes after the last `seq` it saw.

`progress` is "probe jobs ended / probe jobs planned" at that event: counted from the events
themselves (ended: complete, failed, cancelled; a requeued failure counts back), so a message
is the same whenever it is read, live or replayed. The run's end is `run_complete`, written
by the queue when the run's partition has nothing queued or running any more (this module
names it, see `name_partition_completions`), with the probe counts of that moment; rows
written before it existed say `partition_complete`, and are read as `run_complete` too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import events, run_scenarios, runs
from valuerank.queue.events import Event, EventType, events_after, name_partition_completions
from valuerank.runs.progress import job_progress
from valuerank.runs.service import PROBE, Run

RUN_COMPLETE = "run_complete"
# The run's end under both names: `partition_complete` is what rows written before
# `run_complete` existed say (and what a process that never imported this module writes).
# A run that maintenance closed (`partition_reaped`, no job left to end it) ends the same way.
END_TYPES = frozenset(
    {RUN_COMPLETE, EventType.PARTITION_COMPLETE.value, EventType.PARTITION_REAPED.value}
)
TASK_COMPLETE = EventType.TASK_COMPLETE.value
TASK_FAILED = EventType.TASK_FAILED.value
# Probe events that end a probe job (+1) or bring a failed one back (-1).
_ENDED = {
    EventType.TASK_COMPLETE.value: 1,
    EventType.TASK_FAILED.value: 1,
    EventType.TASK_CANCELLED.value: 1,
    EventType.TASK_REQUEUED.value: -1,
}
_RUN_STATES = {
    EventType.PARTITION_PAUSED.value: "run_paused",
    EventType.PARTITION_RESUMED.value: "run_resumed",
    EventType.PARTITION_CANCELLED.value: "run_cancelled",
}
_PROBE_PREFIX = f"{PROBE}:"


async def _run_completion(
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
    return RUN_COMPLETE, {"status": status, "probes": {"done": probes.done, "total": probes.total}}


name_partition_completions(_run_completion)


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
    kind = str(event.type)
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
        return {**base, "type": _RUN_STATES[kind]}
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
    in_run = (events.c.partition == run.id, events.c.org_id == run.org_id, events.c.seq <= seq)
    last_end = (
        await conn.execute(
            select(events.c.seq, events.c.data)
            .where(*in_run, events.c.type == RUN_COMPLETE)
            .order_by(events.c.seq.desc())
            .limit(1)
        )
    ).first()
    done, since = 0, 0
    if last_end is not None:
        probes = (last_end.data or {}).get("probes")
        if isinstance(probes, Mapping) and isinstance(probes.get("done"), int):
            done, since = int(probes["done"]), int(last_end.seq)
    counted = await conn.execute(
        select(events.c.type, func.count())
        .where(
            *in_run,
            events.c.seq > since,
            events.c.type.in_(list(_ENDED)),
            events.c.data["kind"].as_string() == PROBE,
        )
        .group_by(events.c.type)
    )
    for kind, n in counted:
        done += _ENDED[str(kind)] * int(n)
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

    return [*(t.value for t in EventType), RUN_COMPLETE, ALERT_TOPIC]
