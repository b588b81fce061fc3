"""`VALUERANK_WORKER_*`: the queue's settings (`QueueSettings`, where every knob and its
default is written once) read from the environment or `.env`, plus what only a worker
process has (its id, its concurrency)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from valuerank.errors import InvalidInputError
from valuerank.queue.settings import QueueSettings

ENV_PREFIX = "VALUERANK_WORKER_"
# Names earlier versions read; setting one now is an error that names its successor.
RENAMED = {
    f"{ENV_PREFIX}STALE_LEASE_SECONDS": f"{ENV_PREFIX}LEASE_SECONDS",
}


class WorkerSettings(BaseSettings, QueueSettings):
    """Every `QueueSettings` field as `VALUERANK_WORKER_<FIELD>`, plus `ID` and `CONCURRENCY`."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_file=".env",
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


def worker_settings(environ: Mapping[str, str] = os.environ) -> WorkerSettings:
    """The worker's settings; a variable under its old name is refused, naming the new one."""
    for old, new in RENAMED.items():
        if old in environ:
            raise InvalidInputError(f"{old} is now called {new}", hint=f"rename it to {new}")
    return WorkerSettings()
