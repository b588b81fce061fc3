"""The generic job engine: jobs are (kind, payload); it knows nothing about ValueRank.

At-least-once execution with exactly-once results: claim in one statement, leases with a
fencing token, guarded transitions, classified errors, caps, fairness, controls, events.

Each name below is imported from its submodule when first used (PEP 562), not with the
package: importing any submodule runs this file, and every command, which needs only the
dialect helpers (through the organisations), would otherwise load the claim, the rate
limiter, the outbox and the worker with it.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

from valuerank.lazy import exports_by_name, load_export

if TYPE_CHECKING:
    from valuerank.queue.claim import claim
    from valuerank.queue.controls import (
        Cancelled,
        cancel_job,
        cancel_partition,
        pause_org,
        pause_partition,
        pause_provider,
        pause_queue,
        requeue_failed,
        resume_org,
        resume_partition,
        resume_provider,
        resume_queue,
    )
    from valuerank.queue.enqueue import Enqueued, JobSpec, enqueue, enqueue_many
    from valuerank.queue.errors import (
        ErrorCategory,
        Permanent,
        RateLimited,
        Snooze,
        Transient,
        errors_of,
    )
    from valuerank.queue.events import Event, EventType, events_after
    from valuerank.queue.job import Job, Lease, get_job, list_jobs
    from valuerank.queue.lease import (
        LeaseState,
        cancel,
        complete,
        fail,
        heartbeat,
        release,
        retry_later,
        settle_error,
    )
    from valuerank.queue.reaper import Reaped, reap
    from valuerank.queue.settings import QueueSettings
    from valuerank.queue.slots import SlotScope, list_caps, remove_cap, set_cap
    from valuerank.queue.states import InvalidTransition, JobStatus
    from valuerank.queue.status import QueueStatus, queue_status
    from valuerank.queue.worker import HandlerResult, Worker, WorkerStats

# Each submodule → the names the package exports from it: the imports above, for the type
# checker (tests/queue/test_package.py holds these, the imports and `__all__` equal).
_SUBMODULE_EXPORTS: dict[str, tuple[str, ...]] = {
    "claim": ("claim",),
    "controls": (
        "Cancelled",
        "cancel_job",
        "cancel_partition",
        "pause_org",
        "pause_partition",
        "pause_provider",
        "pause_queue",
        "requeue_failed",
        "resume_org",
        "resume_partition",
        "resume_provider",
        "resume_queue",
    ),
    "enqueue": ("Enqueued", "JobSpec", "enqueue", "enqueue_many"),
    "errors": ("ErrorCategory", "Permanent", "RateLimited", "Snooze", "Transient", "errors_of"),
    "events": ("Event", "EventType", "events_after"),
    "job": ("Job", "Lease", "get_job", "list_jobs"),
    "lease": (
        "LeaseState",
        "cancel",
        "complete",
        "fail",
        "heartbeat",
        "release",
        "retry_later",
        "settle_error",
    ),
    "reaper": ("Reaped", "reap"),
    "settings": ("QueueSettings",),
    "slots": ("SlotScope", "list_caps", "remove_cap", "set_cap"),
    "states": ("InvalidTransition", "JobStatus"),
    "status": ("QueueStatus", "queue_status"),
    "worker": ("HandlerResult", "Worker", "WorkerStats"),
}
_EXPORTS = exports_by_name(_SUBMODULE_EXPORTS)


def __getattr__(name: str) -> Any:
    return load_export(__name__, globals(), _EXPORTS, name)


class _Package(ModuleType):
    """Importing a submodule binds it on its package, as an attribute of its name. Two
    exports share their submodule's name (`claim`, `enqueue`): the package's `claim` and
    `enqueue` stay the functions whichever is imported first, as when this file imported
    everything at once."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, ModuleType) and name in _EXPORTS:
            return  # `__getattr__` binds the export on first use
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = [
    "Cancelled",
    "Enqueued",
    "ErrorCategory",
    "Event",
    "EventType",
    "HandlerResult",
    "InvalidTransition",
    "Job",
    "JobSpec",
    "JobStatus",
    "Lease",
    "LeaseState",
    "Permanent",
    "QueueSettings",
    "QueueStatus",
    "RateLimited",
    "Reaped",
    "SlotScope",
    "Snooze",
    "Transient",
    "Worker",
    "WorkerStats",
    "cancel",
    "cancel_job",
    "cancel_partition",
    "claim",
    "complete",
    "enqueue",
    "enqueue_many",
    "errors_of",
    "events_after",
    "fail",
    "get_job",
    "heartbeat",
    "list_caps",
    "list_jobs",
    "pause_org",
    "pause_partition",
    "pause_provider",
    "pause_queue",
    "queue_status",
    "reap",
    "release",
    "remove_cap",
    "requeue_failed",
    "resume_org",
    "resume_partition",
    "resume_provider",
    "resume_queue",
    "retry_later",
    "set_cap",
    "settle_error",
]
