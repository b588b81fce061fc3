"""Queue tuning knobs, and their defaults: the one place they are written.

`QueueSettings` is a plain pydantic model; the application reads it from the environment
(`valuerank.cli.worker_settings.WorkerSettings`: `VALUERANK_WORKER_<FIELD>`), tests and
benchmarks build it directly. A concurrency cap of 0 means no cap, as unset does.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

N = TypeVar("N", int, float)

# The heartbeat when none is set: a third of the lease, at most this often.
MAX_DEFAULT_HEARTBEAT_SECONDS = 15.0


def unlimited_if_zero(value: N | None) -> N | None:
    """A limit of 0 (or none) is no limit: None. Negative values are left to be refused."""
    return None if value is None or value == 0 else value


class QueueSettings(BaseModel):
    """Timing and concurrency of the queue; every duration is in seconds."""

    model_config = ConfigDict(frozen=True)

    lease_seconds: float = Field(
        default=60.0,
        gt=0,
        description="How long a claim holds a job without a heartbeat; a job whose worker "
        "stopped beating this long is reaped (back to the queue, or failed when out of tries).",
    )
    heartbeat_seconds: float = Field(
        default=MAX_DEFAULT_HEARTBEAT_SECONDS,
        gt=0,
        description="How often a worker extends the lease of a running job (default: a third "
        f"of the lease, at most {MAX_DEFAULT_HEARTBEAT_SECONDS:g} s).",
    )
    poll_seconds: float = Field(
        default=1.0, gt=0, description="How long an idle worker waits before claiming again."
    )
    retry_base_seconds: float = Field(
        default=2.0, ge=0, description="First transient-retry backoff ceiling (doubles per try)."
    )
    retry_cap_seconds: float = Field(
        default=300.0, ge=0, description="Largest transient-retry backoff ceiling."
    )
    max_runtime_seconds: float | None = Field(
        default=None, gt=0, description="A running job older than this is failed by the reaper."
    )
    reap_interval_seconds: float = Field(
        default=30.0, gt=0, description="How often a worker runs the reaper."
    )
    shutdown_grace_seconds: float = Field(
        default=30.0, ge=0, description="How long a stopping worker waits for running jobs."
    )
    global_concurrency: int | None = Field(
        default=None,
        ge=0,
        description="Jobs running at once over all workers; 0: no cap (lifts one set before); "
        "unset: the cap the fleet has (none unless set).",
    )
    org_concurrency: int | None = Field(
        default=None,
        ge=0,
        description="Default cap of jobs running at once per organisation; 0: no cap (lifts "
        "the default caps set before); unset: the default the fleet has (none unless set).",
    )
    retention_days: float = Field(
        default=30.0,
        gt=0,
        description="Finished jobs, delivered notifications and maintenance records older "
        "than this are pruned by maintenance (events: see event_retention_days).",
    )
    event_retention_days: float = Field(
        default=0.0,
        ge=0,
        description="Events (a run's history, which the live feeds replay) older than this "
        "are pruned by maintenance once their partition has nothing queued or running, except "
        "each partition's last one (a run's end, with its counts); 0 keeps them all.",
    )
    maintenance_interval_seconds: float = Field(
        default=300.0, gt=0, description="How often a worker runs maintenance (fleet-wide)."
    )
    notification_drain_seconds: float = Field(
        default=1.0, gt=0, description="How often a worker delivers due webhook notifications."
    )
    burst_wait_seconds: float = Field(
        default=300.0,
        ge=0,
        description="Burst mode (`worker --burst`): how long an idle worker still waits for "
        "queued jobs of the partitions it worked on (a snoozed finalize step, a retry after "
        "a backoff) before it exits; jobs due later than that are left for the next worker.",
    )
    claim_window_slack: int = Field(
        default=16,
        ge=1,
        description="PostgreSQL: candidates a claim reads per partition beyond the jobs it "
        "asks for, so that jobs held by concurrent claimers (skipped) do not leave it short.",
    )
    claim_ahead: int = Field(
        default=16,
        ge=0,
        description="Most jobs a worker claims beyond its concurrency when its jobs are short "
        "(they wait in the worker for a free place; see claim_ahead_seconds); 0: never.",
    )
    claim_ahead_seconds: float = Field(
        default=0.5,
        gt=0,
        description="A worker claims ahead only as many jobs as it expects to start within "
        "this (at most half a heartbeat), from how long its handlers take; a job claimed "
        "ahead that has not started when its first heartbeat is due is handed back.",
    )

    @model_validator(mode="before")
    @classmethod
    def _default_heartbeat(cls, data: Any) -> Any:
        """Without an explicit heartbeat, a third of the lease (at most 15 s): a short lease
        stays valid between beats."""
        if isinstance(data, dict) and data.get("heartbeat_seconds") is None:
            lease = data.get("lease_seconds")
            if lease is not None:
                data = {
                    **data,
                    "heartbeat_seconds": min(MAX_DEFAULT_HEARTBEAT_SECONDS, float(lease) / 3),
                }
            else:
                data = {k: v for k, v in data.items() if k != "heartbeat_seconds"}
        return data

    @property
    def org_cap(self) -> int | None:
        """The per-organisation default cap the claim gives organisations; None: none
        (0 is kept in `org_concurrency`: a worker started with it lifts the old caps)."""
        return unlimited_if_zero(self.org_concurrency)

    @model_validator(mode="after")
    def _heartbeat_inside_lease(self) -> QueueSettings:
        if self.heartbeat_seconds >= self.lease_seconds:
            raise ValueError(
                f"heartbeat_seconds ({self.heartbeat_seconds}) must be shorter than "
                f"lease_seconds ({self.lease_seconds}), or leases expire between heartbeats"
            )
        return self
