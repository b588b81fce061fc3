"""A provider's RPM counts calls, not jobs: a probe with a follow-up turn makes two calls, and
the second one reserves its own request from the rate bucket (issue 21). Real workers, the
OpenAI adapter against a fake OpenAI server on loopback that timestamps every call it gets,
on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from tests.waiting import run_report_when

import valuerank
from valuerank.db import Database
from valuerank.definitions.service import import_definition
from valuerank.pipeline.calls import ProviderPool
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.handlers import register_pipeline_handlers
from valuerank.pipeline.launch import launch_run
from valuerank.providers.model_id import parse_model_id
from valuerank.queue import QueueSettings, Worker
from valuerank.queue.call_reserve import reserve_request
from valuerank.queue.ratelimit import bucket_key, bucket_state, configure_bucket
from valuerank.runs.config import RunConfig
from valuerank.runs.service import start_run
from valuerank.runs.states import RunStatus
from valuerank.shapes import dump

DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"
FAST = QueueSettings(poll_seconds=0.02, heartbeat_seconds=0.05, retry_base_seconds=0.0)
RPM = 60.0  # one request a second refills
MODEL = "openai:gpt-4o-mini"


def _fake_servers() -> ModuleType:
    """tests/providers/fake_servers.py, loaded by path as its own conftest does."""
    name = "valuerank_test_fake_servers"
    if name not in sys.modules:
        path = Path(__file__).parents[1] / "providers" / "fake_servers.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)

    class Timed(_fake_servers().OpenAIServer):  # type: ignore[misc]  # loaded by path: Any
        """Also keeps when each call arrived (monotonic clock)."""

        def __init__(self) -> None:
            super().__init__()
            self.times: list[float] = []

        def record(self, received: Any) -> None:
            self.times.append(time.monotonic())
            super().record(received)

    fake = Timed().start()
    yield fake
    fake.stop()


async def test_follow_up_turns_reserve_their_own_requests(
    db: Database, org_id: str, server: Any
) -> None:
    environ = {"OPENAI_API_KEY": "sk-test-0000000000", "VALUERANK_OPENAI_BASE_URL": server.base_url}
    config = RunConfig(models=(MODEL,), sample_percentage=40, sample_seed=0, followup_turns=1)
    async with db.transaction() as conn:
        await configure_bucket(conn, "openai", rpm=RPM)
        stored, _ = await import_definition(conn, org_id, DEMO.read_text(), source_file=DEMO.name)
        launched = await launch_run(
            conn,
            org_id,
            stored.version.id,
            config,
            environ=environ,
            allow_unknown_models=True,
            start=False,
        )
    run_id, probes = launched.created.run.id, launched.created.jobs_planned
    assert probes >= 8  # more calls (2 per probe) than the bucket holds when they start

    worker = Worker(db, settings=FAST, concurrency=8)
    ctx = PipelineContext(db, providers=ProviderPool(environ=environ), poll_seconds=0.1)
    register_pipeline_handlers(worker, ctx)
    task = asyncio.create_task(worker.run_forever())
    try:
        # A warm worker (the SDK client built), so that the calls follow the start closely.
        async with db.transaction() as conn:
            await ctx.providers.get(conn, org_id, parse_model_id(MODEL))
        # Spend the bucket down to about one request per probe: the claims can take them
        # all, and every follow-up turn must then wait for a request to refill.
        for _ in range(int(RPM) - probes):
            await reserve_request(db, provider="openai", model=MODEL)
        while True:  # what refilled while spending, spent too
            async with db.transaction(immediate=True) as conn:
                state = await bucket_state(conn, bucket_key("openai"))
                assert state is not None and state.available_requests is not None
                start, held = time.monotonic(), state.available_requests
                if held < probes + 1:
                    await start_run(conn, org_id, run_id)
                    break
            await reserve_request(db, provider="openai", model=MODEL)
        report = await run_report_when(db, org_id, run_id)
    finally:
        worker.stop()
        await task
        await ctx.aclose()
    assert report.run.status is RunStatus.COMPLETED, dump(report)

    times = sorted(server.times)
    assert len(times) == 2 * probes  # turn 1 and the follow-up of each probe, once each
    # The n-th call cannot come before the bucket held n requests: what it held at the start
    # plus RPM/60 a second since (one request of slack for the two clocks).
    rate = RPM / 60.0
    for n, moment in enumerate(times, start=1):
        allowed = held + rate * (moment - start) + 1
        assert n <= allowed, f"call {n} at {moment - start:.2f} s: the bucket allowed {allowed:.1f}"
    # Hence at most RPM calls in any minute (here: every call of the run).
    assert max(sum(1 for t in times if s <= t < s + 60) for s in times) <= RPM
