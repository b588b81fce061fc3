"""`VALUERANK_WORKER_*`: the queue's own settings read from the environment, one source of
every default; 0 caps are no caps."""

from __future__ import annotations

import pytest

from valuerank.cli.worker_settings import WorkerSettings, worker_settings
from valuerank.errors import InvalidInputError
from valuerank.queue.settings import QueueSettings


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("VALUERANK_WORKER_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # no .env file of the developer's


def test_the_worker_defaults_are_the_queue_defaults() -> None:
    assert worker_settings().queue_settings() == QueueSettings()
    assert set(QueueSettings.model_fields) <= set(WorkerSettings.model_fields)


def test_each_knob_is_read_from_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VALUERANK_WORKER_LEASE_SECONDS", "9")
    monkeypatch.setenv("VALUERANK_WORKER_REAP_INTERVAL_SECONDS", "4")
    monkeypatch.setenv("VALUERANK_WORKER_RETENTION_DAYS", "7")
    monkeypatch.setenv("VALUERANK_WORKER_CONCURRENCY", "6")
    ws = worker_settings()
    settings = ws.queue_settings()
    assert (settings.lease_seconds, settings.reap_interval_seconds) == (9.0, 4.0)
    assert settings.retention_days == 7.0 and ws.concurrency == 6
    assert settings.heartbeat_seconds == 3.0  # a third of the lease when not set


def test_an_old_variable_name_is_refused_with_the_new_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VALUERANK_WORKER_STALE_LEASE_SECONDS", "9")
    with pytest.raises(InvalidInputError, match="VALUERANK_WORKER_LEASE_SECONDS"):
        worker_settings()


def test_a_zero_cap_is_no_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VALUERANK_WORKER_ORG_CONCURRENCY", "0")
    monkeypatch.setenv("VALUERANK_WORKER_GLOBAL_CONCURRENCY", "0")
    settings = worker_settings().queue_settings()
    assert settings.org_concurrency is None  # no default organisation cap
    assert settings.global_concurrency == 0  # lifts a global cap set before (see the worker)
    assert QueueSettings(org_concurrency=0).org_concurrency is None
