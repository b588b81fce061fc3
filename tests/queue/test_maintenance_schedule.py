"""The maintenance schedule and metrics as pure functions of recorded passes (plain values)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from valuerank.queue.maintenance import MaintenanceRun
from valuerank.queue.maintenance_history import metrics
from valuerank.queue.maintenance_schedule import summarize_schedule

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
INTERVAL = 300.0


def _pass(
    n: int,
    minutes: float,
    *,
    status: str = "succeeded",
    kind: str = "full",
    trigger: str = "worker",
    duration_ms: int = 100,
    actions: dict[str, Any] | None = None,
) -> MaintenanceRun:
    started = T0 + timedelta(minutes=minutes)
    return MaintenanceRun(
        id=f"pass-{n:03d}",
        worker_id="w",
        status=status,
        actions=actions or {},
        error="RuntimeError: boom" if status == "failed" else None,
        started_at=started,
        finished_at=started + timedelta(milliseconds=duration_ms),
        duration_ms=duration_ms,
        kind=kind,
        trigger=trigger,
    )


def test_never_run() -> None:
    summary = summarize_schedule([], now=T0, interval_seconds=INTERVAL)
    assert summary.status == "never_run" and summary.next_due is None
    assert summary.anomalies == [] and summary.to_dict()["last_pass"] is None


def test_on_schedule_is_ok_and_next_due_is_one_interval_after_the_last_pass() -> None:
    passes = [_pass(i, 5 * i) for i in range(4)]
    summary = summarize_schedule(passes, now=T0 + timedelta(minutes=16), interval_seconds=INTERVAL)
    assert summary.status == "ok" and summary.anomalies == []
    assert summary.next_due == T0 + timedelta(minutes=20)
    assert summary.last_pass is not None and summary.last_pass.id == "pass-003"


def test_a_gap_between_passes_is_a_missed_schedule_keyed_by_the_pass_before_it() -> None:
    passes = [_pass(0, 0), _pass(1, 5), _pass(2, 30), _pass(3, 35)]
    summary = summarize_schedule(passes, now=T0 + timedelta(minutes=36), interval_seconds=INTERVAL)
    assert summary.status == "ok"
    [missed] = summary.anomalies
    assert missed.key == "missed_schedule:pass-001" and missed.kind == "missed_schedule"
    assert missed.detail["gap_seconds"] == 1500 and missed.detail["missed_passes"] == 4
    assert missed.detail["ongoing"] is False


def test_an_ongoing_gap_is_overdue_and_keeps_its_key_when_the_next_pass_comes() -> None:
    passes = [_pass(0, 0), _pass(1, 5)]
    now = T0 + timedelta(minutes=30)
    overdue = summarize_schedule(passes, now=now, interval_seconds=INTERVAL)
    assert overdue.status == "overdue"
    [ongoing] = overdue.anomalies
    assert ongoing.key == "missed_schedule:pass-001" and ongoing.detail["ongoing"] is True
    later = summarize_schedule([*passes, _pass(2, 31)], now=now, interval_seconds=INTERVAL)
    assert [a.key for a in later.anomalies] == [ongoing.key]  # announced once, not twice


def test_failed_passes_are_anomalies_and_a_failed_last_pass_is_failing() -> None:
    passes = [_pass(0, 0, status="failed"), _pass(1, 5), _pass(2, 10, status="failed")]
    summary = summarize_schedule(passes, now=T0 + timedelta(minutes=11), interval_seconds=INTERVAL)
    assert summary.status == "failing"
    assert [a.key for a in summary.anomalies] == ["failed_pass:pass-000", "failed_pass:pass-002"]
    assert summary.anomalies[0].detail["error"] == "RuntimeError: boom"
    assert summary.last_success is not None and summary.last_success.id == "pass-001"


def test_tolerance_widens_what_counts_as_missed() -> None:
    passes = [_pass(0, 0), _pass(1, 12)]  # 2.4 intervals apart
    now = T0 + timedelta(minutes=13)
    assert len(summarize_schedule(passes, now=now, interval_seconds=INTERVAL).anomalies) == 1
    lenient = summarize_schedule(passes, now=now, interval_seconds=INTERVAL, tolerance=3.0)
    assert lenient.anomalies == []


def test_metrics_count_passes_and_sum_what_they_did() -> None:
    passes = [
        _pass(
            0,
            0,
            duration_ms=100,
            actions={
                "reaped": {"requeued": 2, "failed": 1},
                "pruned_jobs": 10,
                "pruned_events": 7,
                "stale_runs": {"reaped": 2, "resumed": 1},
            },
        ),
        _pass(1, 5, duration_ms=300, status="failed"),
        _pass(2, 6, kind="prune_jobs", trigger="api", actions={"pruned_jobs": 5}),
        _pass(3, 7, kind="reap_stale_runs", trigger="api", actions={"stale_runs": {"reaped": 1}}),
    ]
    now = T0 + timedelta(minutes=10)
    figures = metrics(passes, now=now, window_seconds=3600.0)
    assert figures["passes"] == 4 and figures["full_passes"] == 2 and figures["full_failed"] == 1
    assert figures["by_kind"] == {"full": 2, "prune_jobs": 1, "reap_stale_runs": 1}
    assert figures["by_trigger"] == {"api": 2, "worker": 2}
    assert figures["by_status"] == {"succeeded": 3, "failed": 1}
    assert figures["duration_ms"] == {"mean": 200.0, "p50": 200.0, "p95": 290.0, "max": 300}
    assert figures["totals"] == {
        "jobs_reaped": 3,
        "pruned_jobs": 15,
        "pruned_outbox": 0,
        "pruned_maintenance_runs": 0,
        "pruned_events": 7,
        "stale_runs_reaped": 3,
        "stale_runs_resumed": 1,
    }
    last = figures["last_full_pass"]
    assert last["id"] == "pass-001" and last["status"] == "failed"
    assert abs(last["age_seconds"] - 299.7) < 0.01


def test_metrics_of_no_pass() -> None:
    figures = metrics([], now=T0, window_seconds=60.0)
    assert figures["passes"] == 0 and figures["last_full_pass"] is None
    assert figures["duration_ms"] == {"mean": None, "p50": None, "p95": None, "max": None}
