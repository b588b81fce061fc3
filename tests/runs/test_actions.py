"""The actions a run offers, for every status: pure values, no database."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from valuerank.runs.actions import RunAction, run_actions
from valuerank.runs.config import RunConfig
from valuerank.runs.progress import Progress, RunReport
from valuerank.runs.service import Run
from valuerank.runs.states import RunStatus

A = RunAction


def report(
    status: RunStatus,
    *,
    failed: int = 0,
    judge_failed: int = 0,
    sample: float = 100.0,
    definition: str | None = "def-1",
) -> RunReport:
    run = Run(
        id="run-1",
        org_id="org-1",
        definition_id=definition,
        name="r",
        cli_run_id="cli",
        status=status,
        config=RunConfig(models=("scripted:utilitarian",), sample_percentage=sample),
        priority=0,
        created_at=datetime(2025, 1, 1, tzinfo=UTC),
        started_at=None,
        finished_at=None,
        summary=None,
        error=None,
        origin="local",
        synthetic=True,
    )
    probes = Progress(
        total=4, queued=0, running=0, completed=4 - failed, failed=failed, cancelled=0
    )
    judging = Progress(
        total=judge_failed, queued=0, running=0, completed=0, failed=judge_failed, cancelled=0
    )
    return RunReport(run, probes, judging, transcripts=0, cost_usd=0.0, eta_seconds=None)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (RunStatus.PENDING, [A.START, A.CANCEL, A.DELETE]),
        (RunStatus.RUNNING, [A.PAUSE, A.CANCEL]),
        (RunStatus.PAUSED, [A.RESUME, A.CANCEL]),
        (RunStatus.SUMMARIZING, [A.PAUSE, A.CANCEL]),
        (RunStatus.COMPLETED, [A.DELETE]),
        (RunStatus.FAILED, [A.DELETE]),
        (RunStatus.CANCELLED, [A.DELETE]),
    ],
)
def test_a_full_run_without_failures_offers_what_its_status_allows(
    status: RunStatus, expected: list[RunAction]
) -> None:
    assert run_actions(report(status)) == expected


def test_failed_jobs_can_be_rerun_once_the_run_has_started() -> None:
    assert A.RERUN_FAILED in run_actions(report(RunStatus.COMPLETED, failed=1))
    assert A.RERUN_FAILED in run_actions(report(RunStatus.RUNNING, judge_failed=2))
    assert A.RERUN_FAILED in run_actions(report(RunStatus.CANCELLED, failed=1))
    assert A.RERUN_FAILED not in run_actions(report(RunStatus.PENDING, failed=1))


def test_only_a_sample_of_a_known_definition_can_be_expanded() -> None:
    assert A.EXPAND in run_actions(report(RunStatus.COMPLETED, sample=30))
    assert A.EXPAND in run_actions(report(RunStatus.PENDING, sample=99.5))
    assert A.EXPAND not in run_actions(report(RunStatus.COMPLETED, sample=100))
    assert A.EXPAND not in run_actions(report(RunStatus.COMPLETED, sample=30, definition=None))
