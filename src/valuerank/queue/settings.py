"""Queue tuning knobs. A plain pydantic model: the application maps env vars onto it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class QueueSettings(BaseModel):
    """Timing and concurrency of the queue; every duration is in seconds."""

    model_config = ConfigDict(frozen=True)

    lease_seconds: float = Field(
        default=60.0, gt=0, description="How long a claim holds a job without a heartbeat."
    )
    heartbeat_seconds: float = Field(
        default=15.0, gt=0, description="How often a worker extends the lease of a running job."
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
    reap_seconds: float = Field(
        default=30.0, gt=0, description="How often a worker runs the reaper."
    )
    shutdown_grace_seconds: float = Field(
        default=30.0, ge=0, description="How long a stopping worker waits for running jobs."
    )
    global_concurrency: int | None = Field(
        default=None, ge=0, description="Jobs running at once over all workers (None: no cap)."
    )
    org_concurrency: int | None = Field(
        default=None, ge=0, description="Default cap of jobs running at once per organisation."
    )
    retention_days: float = Field(
        default=14.0,
        gt=0,
        description="Finished jobs, delivered notifications and maintenance records older "
        "than this are pruned by maintenance (events are kept).",
    )
    maintenance_interval_seconds: float = Field(
        default=300.0, gt=0, description="How often a worker runs maintenance (fleet-wide)."
    )
    notification_drain_seconds: float = Field(
        default=5.0, gt=0, description="How often a worker delivers due webhook notifications."
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

    @model_validator(mode="after")
    def _heartbeat_inside_lease(self) -> QueueSettings:
        if self.heartbeat_seconds >= self.lease_seconds:
            raise ValueError(
                f"heartbeat_seconds ({self.heartbeat_seconds}) must be shorter than "
                f"lease_seconds ({self.lease_seconds}), or leases expire between heartbeats"
            )
        return self
