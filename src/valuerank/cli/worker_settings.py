"""`VALUERANK_WORKER_*`: the queue's settings (`QueueSettings`, where every knob and its
default is written once) read from the environment or `.env`, plus what only a worker
process has (its id, its concurrency)."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

from dotenv import dotenv_values
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from valuerank.errors import InvalidInputError
from valuerank.queue.settings import QueueSettings

ENV_PREFIX = "VALUERANK_WORKER_"
# Names earlier versions read; setting one now is an error that names its successor.
RENAMED = {
    f"{ENV_PREFIX}STALE_LEASE_SECONDS": f"{ENV_PREFIX}LEASE_SECONDS",
}
# The seed's names (seeds/async-eval-worker.md) → our field: read as aliases, with a warning
# naming ours; ours wins when both are set. Same meaning, other defaults (docs/configuration.md).
SEED_ALIASES = {
    "EVAL_WORKER_ID": "id",
    "EVAL_WORKER_POLL_SECONDS": "poll_seconds",
    "EVAL_WORKER_RETRY_BASE_SECONDS": "retry_base_seconds",
    "EVAL_WORKER_MAX_RETRY_DELAY_SECONDS": "retry_cap_seconds",
    "EVAL_WORKER_HEARTBEAT_SECONDS": "heartbeat_seconds",
    "EVAL_WORKER_STALE_HEARTBEAT_SECONDS": "lease_seconds",
    "EVAL_WORKER_REAP_INTERVAL_SECONDS": "reap_interval_seconds",
    "EVAL_WORKER_NOTIFY_DRAIN_SECONDS": "notification_drain_seconds",
    "EVAL_WORKER_MAX_RUNTIME_SECONDS": "max_runtime_seconds",
    "EVAL_WORKER_MAX_CONCURRENCY_GLOBAL": "global_concurrency",
    "EVAL_WORKER_MAX_CONCURRENCY_PER_ORG": "org_concurrency",
}
ENV_FILE = ".env"

log = logging.getLogger("valuerank.worker")


class WorkerSettings(BaseSettings, QueueSettings):
    """Every `QueueSettings` field as `VALUERANK_WORKER_<FIELD>`, plus `ID` and `CONCURRENCY`."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_file=ENV_FILE,
        env_file_encoding="utf-8",
        extra="ignore",
        frozen=True,
    )

    id: str | None = Field(
        default=None, description="This worker's name in leases and logs (default host:pid:rand)."
    )
    concurrency: int = Field(default=4, ge=1, description="Jobs this process runs at once.")

    def queue_settings(self) -> QueueSettings:
        return QueueSettings(**self.model_dump(include=set(QueueSettings.model_fields)))


def _seed_values(environ: Mapping[str, str]) -> dict[str, str]:
    """The fields set only under the seed's names (environment or `.env`), each with a warning
    naming our variable; a seed name whose VALUERANK_ twin is set is ignored, saying so."""
    found = {**_dotenv(), **environ}  # the environment wins over .env, as for ours
    values: dict[str, str] = {}
    for seed, field in SEED_ALIASES.items():
        if seed not in found:
            continue
        ours = f"{ENV_PREFIX}{field.upper()}"
        if ours in found:
            log.warning("%s is ignored: %s is set and wins", seed, ours)
            continue
        log.warning("%s is read as %s, the preferred name: rename it", seed, ours)
        values[field] = found[seed]
    return values


def _dotenv() -> dict[str, str]:
    if not Path(ENV_FILE).is_file():
        return {}
    return {k: v for k, v in dotenv_values(ENV_FILE).items() if v is not None}


def worker_settings(environ: Mapping[str, str] = os.environ) -> WorkerSettings:
    """The worker's settings; a variable under its old name is refused, naming the new one;
    the seed's EVAL_WORKER_* names are read as aliases (see `SEED_ALIASES`)."""
    for old, new in RENAMED.items():
        if old in environ:
            raise InvalidInputError(f"{old} is now called {new}", hint=f"rename it to {new}")
    # Given to the model itself: init values win over its sources, and ours are not set.
    return WorkerSettings(**_seed_values(environ))  # type: ignore[arg-type]
