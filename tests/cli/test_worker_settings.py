"""`VALUERANK_WORKER_*`: the queue's own settings read from the environment, one source of
every default; 0 caps are no caps."""

from __future__ import annotations

from pathlib import Path

import pytest

from valuerank.cli.worker_settings import WorkerSettings, worker_settings
from valuerank.errors import InvalidInputError
from valuerank.queue.settings import QueueSettings


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import os

    for name in list(os.environ):
        if name.startswith(("VALUERANK_WORKER_", "EVAL_WORKER_")):
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
    assert settings.org_cap is None  # no default organisation cap
    assert settings.org_concurrency == 0  # lifts the default caps set before (see the worker)
    assert settings.global_concurrency == 0  # lifts a global cap set before (see the worker)
    assert QueueSettings(org_concurrency=0).org_cap is None


def test_the_seeds_eval_worker_names_are_read_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("EVAL_WORKER_ID", "seed-worker")
    monkeypatch.setenv("EVAL_WORKER_POLL_SECONDS", "2.5")
    monkeypatch.setenv("EVAL_WORKER_STALE_HEARTBEAT_SECONDS", "90")
    monkeypatch.setenv("EVAL_WORKER_MAX_RETRY_DELAY_SECONDS", "900")
    monkeypatch.setenv("EVAL_WORKER_MAX_RUNTIME_SECONDS", "600")
    monkeypatch.setenv("EVAL_WORKER_MAX_CONCURRENCY_PER_ORG", "0")
    with caplog.at_level("WARNING", logger="valuerank.worker"):
        ws = worker_settings()
    settings = ws.queue_settings()
    assert ws.id == "seed-worker" and settings.poll_seconds == 2.5
    assert settings.lease_seconds == 90.0 and settings.retry_cap_seconds == 900.0
    assert settings.max_runtime_seconds == 600.0 and settings.org_concurrency == 0
    assert "EVAL_WORKER_POLL_SECONDS is read as VALUERANK_WORKER_POLL_SECONDS" in caplog.text
    assert "VALUERANK_WORKER_LEASE_SECONDS" in caplog.text  # each names the preferred name


def test_our_name_wins_over_the_seeds(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    monkeypatch.setenv("EVAL_WORKER_POLL_SECONDS", "2.5")
    monkeypatch.setenv("VALUERANK_WORKER_POLL_SECONDS", "0.5")
    (tmp_path / ".env").write_text(
        "VALUERANK_WORKER_REAP_INTERVAL_SECONDS=7\nEVAL_WORKER_REAP_INTERVAL_SECONDS=10\n"
        "EVAL_WORKER_HEARTBEAT_SECONDS=5\n"
    )
    with caplog.at_level("WARNING", logger="valuerank.worker"):
        settings = worker_settings().queue_settings()
    assert settings.poll_seconds == 0.5 and settings.reap_interval_seconds == 7.0
    assert settings.heartbeat_seconds == 5.0  # a seed name in .env is read too
    assert "EVAL_WORKER_POLL_SECONDS is ignored: VALUERANK_WORKER_POLL_SECONDS is set" in (
        caplog.text
    )
