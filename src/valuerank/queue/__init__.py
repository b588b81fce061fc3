"""The generic job engine: jobs are (kind, payload); it knows nothing about ValueRank.

At-least-once execution with exactly-once results: claim in one statement, leases with a
fencing token, guarded transitions, classified errors, caps, fairness, controls, events.
"""

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
