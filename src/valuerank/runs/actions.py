"""What a user may do with a run now, from its status and its jobs: the buttons a page
enables, written once from the rules of `runs.service` and `runs.states` (the API refuses the
others with 409 / 422 anyway).

| action         | when                                                        |
|----------------|-------------------------------------------------------------|
| `start`        | pending (created, not on the queue yet)                     |
| `pause`        | running or summarizing                                      |
| `resume`       | paused                                                      |
| `cancel`       | pending, running, paused or summarizing                     |
| `rerun_failed` | started, with failed jobs                                   |
| `expand`       | a sample (< 100 %) of a definition still known              |
| `delete`       | pending, completed, failed or cancelled (not under way)     |
| `judge`        | completed, failed or cancelled, with transcripts            |
"""

from __future__ import annotations

from enum import StrEnum

from valuerank.runs.progress import RunReport
from valuerank.runs.service import DELETABLE
from valuerank.runs.states import RunStatus, can_move


class RunAction(StrEnum):
    START = "start"
    PAUSE = "pause"
    RESUME = "resume"
    CANCEL = "cancel"
    RERUN_FAILED = "rerun_failed"
    EXPAND = "expand"
    DELETE = "delete"
    JUDGE = "judge"  # judge its transcripts (again): pipeline/rejudge.py


# Pausing a run that has not started is allowed by the state table but means nothing to a
# user (starting it is the choice): the button is offered for runs under way only.
_PAUSABLE = frozenset({RunStatus.RUNNING, RunStatus.SUMMARIZING})


def run_actions(report: RunReport) -> list[RunAction]:
    """The actions valid for the run of `report`, in the order of `RunAction`."""
    run = report.run
    status = run.status
    failed = report.progress.failed + report.judging.failed
    valid = {
        RunAction.START: status is RunStatus.PENDING,
        RunAction.PAUSE: status in _PAUSABLE,
        RunAction.RESUME: status is RunStatus.PAUSED,
        RunAction.CANCEL: can_move(status, RunStatus.CANCELLED),
        RunAction.RERUN_FAILED: status is not RunStatus.PENDING and failed > 0,
        RunAction.EXPAND: run.definition_id is not None and run.config.sample_percentage < 100,
        RunAction.DELETE: status in DELETABLE,
        RunAction.JUDGE: status.terminal and report.transcripts > 0,
    }
    return [action for action in RunAction if valid[action]]
