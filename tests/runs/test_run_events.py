"""A run's stored events read as the seed's messages (valuerank.runs.events), as plain values:
probe-only progress, scenario and model of failures read from the item key, requeues counted
back, the old `partition_complete` rows read as `run_complete`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from valuerank.queue.events import Event, EventType
from valuerank.runs.events import ProbeTally, message_of, probe_parts

AT = datetime(2025, 9, 17, 12, 30, tzinfo=UTC)
MODEL = "scripted:utilitarian?latency_ms=5"


def _event(seq: int, type: EventType | str, **data: Any) -> Event:
    return Event("run-1", seq, "org-1", type, data, AT)


def _probe(seq: int, type: EventType, scenario: str, **more: Any) -> Event:
    key = f"probe:{scenario}:{MODEL}:0"
    return _event(seq, type, kind="probe", item_key=key, model=MODEL, job_id=f"j{seq}", **more)


def test_probe_messages_count_probes_only() -> None:
    tally = ProbeTally(total=3)
    stored = [
        _event(1, EventType.TASK_STARTED, kind="probe"),
        _probe(2, EventType.TASK_COMPLETE, "s1", scenario_id="s1", decision_code=4, attempt=1),
        _event(3, EventType.TASK_COMPLETE, kind="judge", model="scripted:centrist"),
        _probe(4, EventType.TASK_RETRYING, "s2", error="transient: boom"),
        _probe(5, EventType.TASK_FAILED, "s2", error="transient: boom", attempt=3),
        _probe(6, EventType.TASK_REQUEUED, "s2"),
        _event(7, EventType.PARTITION_PAUSED),
        _probe(8, EventType.TASK_COMPLETE, "s2"),
        _event(9, EventType.PARTITION_COMPLETE, progress="9/9"),  # an old row
    ]
    messages = [m for e in stored if (m := message_of(e, tally)) is not None]
    assert [(m["type"], m["seq"], m.get("progress")) for m in messages] == [
        ("task_complete", 2, "1/3"),
        ("task_failed", 5, "2/3"),
        ("run_paused", 7, None),
        ("task_complete", 8, "2/3"),  # the failure was requeued, then completed
        ("run_complete", 9, "2/3"),
    ]
    assert messages[0]["scenario_id"] == "s1" and messages[0]["model"] == MODEL
    assert messages[0]["decision_code"] == 4 and messages[0]["sample"] == 0
    failed = messages[1]
    assert failed["scenario_id"] == "s2" and failed["error"] == "transient: boom"
    assert messages[0]["timestamp"] == AT.isoformat()


def test_run_complete_takes_the_stored_probe_counts() -> None:
    tally = ProbeTally(done=1, total=5)
    end = _event(12, "run_complete", status="cancelled", probes={"done": 5, "total": 5})
    message = message_of(end, tally)
    assert message is not None
    assert message["type"] == "run_complete" and message["status"] == "cancelled"
    assert message["progress"] == "5/5" and tally.done == 5


def test_probe_parts_read_model_ids_with_colons_and_parameters() -> None:
    data = {"item_key": f"probe:scn-7:{MODEL}:2", "model": MODEL}
    assert probe_parts(data) == ("scn-7", MODEL, 2)
    assert probe_parts({"scenario_id": "x", "model": "m"}) == ("x", "m", None)


def test_a_run_closed_by_maintenance_ends_with_run_complete_and_its_status() -> None:
    tally = ProbeTally(total=4)
    reaped = _event(
        3,
        EventType.PARTITION_REAPED,
        status="failed",
        previous_status="running",
        probes={"done": 4, "total": 4, "completed": 0, "failed": 4},
    )
    message = message_of(reaped, tally)
    assert message is not None
    assert (message["type"], message["status"], message["progress"]) == (
        "run_complete",
        "failed",
        "4/4",
    )
