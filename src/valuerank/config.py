"""Settings: environment variables with the `VALUERANK_` prefix, or a `.env` file."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

if TYPE_CHECKING:  # config sits below the queue: imported at call time only
    from valuerank.queue.settings import QueueSettings

DEFAULT_DATABASE_URL = "sqlite:///./valuerank.db"
DEFAULT_ORG_SLUG = "default"


class Settings(BaseSettings):
    """Process-wide settings; read once, passed down explicitly."""

    model_config = SettingsConfigDict(
        env_prefix="VALUERANK_", env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

    database_url: str = Field(
        default=DEFAULT_DATABASE_URL,
        description="sqlite:///path (embedded default) or postgresql://user@host/db.",
    )
    sqlite_busy_timeout_ms: int = Field(
        default=30_000,
        ge=0,
        description="How long SQLite waits for a lock before failing (workers share one file).",
    )
    default_org: str = Field(
        default=DEFAULT_ORG_SLUG, description="Organisation used by the CLI on this install."
    )
    echo_sql: bool = False
    secret_key: SecretStr | None = Field(
        default=None,
        description="Encrypts stored provider API keys and webhook signing secrets: a Fernet key "
        "(`valuerank credentials keygen`) or a passphrase of at least 16 characters. Changing "
        "it makes stored secrets unreadable. Unset: provider keys come from the environment "
        "only, and webhooks cannot have a signing secret.",
    )
    api_token: SecretStr | None = Field(
        default=None,
        description="The access token of `valuerank serve` (Bearer header, or `/?token=` once "
        "in the browser). Unset: a random one is generated at each start and printed in the URL.",
    )

    validation_cache_seconds: float = Field(
        default=300.0,
        ge=0,
        description="How long the API caches a consensus read of the validation API (the "
        "multi-model view, a task's consensus); a new validation invalidates it at once. "
        "0 turns the cache off.",
    )


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()


class WorkerSettings(BaseSettings):
    """`valuerank worker` tuning: env vars `VALUERANK_WORKER_*`; every duration in seconds.

    Mapped onto the queue's own `QueueSettings` by `queue_settings()`.
    """

    model_config = SettingsConfigDict(
        env_prefix="VALUERANK_WORKER_", env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

    id: str | None = Field(
        default=None, description="This worker's name in leases and logs (default host:pid:rand)."
    )
    concurrency: int = Field(default=4, ge=1, description="Jobs this process runs at once.")
    poll_seconds: float = Field(default=1.0, gt=0, description="Idle wait between claims.")
    heartbeat_seconds: float | None = Field(
        default=None,
        gt=0,
        description="Lease extension period (default: a third of the lease, at most 15 s).",
    )
    stale_lease_seconds: float = Field(
        default=60.0,
        gt=0,
        description="Lease length: a job without a heartbeat this long is reaped.",
    )
    reap_interval_seconds: float = Field(default=30.0, gt=0, description="How often to reap.")
    max_runtime_seconds: float | None = Field(
        default=None, gt=0, description="A job running longer than this fails (None: no limit)."
    )
    retry_base_seconds: float = Field(default=2.0, ge=0, description="First retry backoff ceiling.")
    retry_cap_seconds: float = Field(default=300.0, ge=0, description="Largest retry backoff.")
    global_concurrency: int | None = Field(
        default=None, ge=0, description="Jobs running at once over all workers (None: no cap)."
    )
    org_concurrency: int | None = Field(
        default=None, ge=0, description="Default cap of jobs running at once per organisation."
    )
    notification_drain_seconds: float = Field(
        default=1.0, gt=0, description="How often the outbox of notifications is drained."
    )
    maintenance_interval_seconds: float = Field(
        default=3600.0, gt=0, description="How often pruning and other maintenance runs."
    )
    retention_days: float = Field(
        default=30.0, gt=0, description="Finished jobs older than this are pruned."
    )
    shutdown_grace_seconds: float = Field(
        default=30.0, ge=0, description="How long a stopping worker waits for running jobs."
    )


def queue_settings(worker: WorkerSettings | None = None) -> QueueSettings:
    """The `valuerank.queue.QueueSettings` of these worker settings.

    Fields the queue does not (yet) know are left out; the heartbeat defaults to a third of
    the lease (at most 15 s) so a short lease stays valid.
    """
    from valuerank.queue.settings import QueueSettings

    w = worker if worker is not None else WorkerSettings()
    heartbeat = w.heartbeat_seconds
    if heartbeat is None:
        heartbeat = min(15.0, w.stale_lease_seconds / 3)
    values: dict[str, Any] = {
        "lease_seconds": w.stale_lease_seconds,
        "heartbeat_seconds": heartbeat,
        "poll_seconds": w.poll_seconds,
        "retry_base_seconds": w.retry_base_seconds,
        "retry_cap_seconds": w.retry_cap_seconds,
        "max_runtime_seconds": w.max_runtime_seconds,
        "reap_seconds": w.reap_interval_seconds,
        "reap_interval_seconds": w.reap_interval_seconds,
        "shutdown_grace_seconds": w.shutdown_grace_seconds,
        "global_concurrency": w.global_concurrency,
        "org_concurrency": w.org_concurrency,
        "notification_drain_seconds": w.notification_drain_seconds,
        "maintenance_interval_seconds": w.maintenance_interval_seconds,
        "retention_days": w.retention_days,
    }
    known = QueueSettings.model_fields
    return QueueSettings(**{k: v for k, v in values.items() if k in known})
