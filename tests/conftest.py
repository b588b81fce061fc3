"""Shared fixtures: every storage test runs on SQLite and on PostgreSQL, each on a clean schema.

PostgreSQL is found at VALUERANK_TEST_DATABASE_URL (default: the local server, database
`test`). Each test gets its own schema (dropped afterwards) through the connection's
search_path. Locally an unreachable PostgreSQL skips those tests, saying why; in CI
(`is_ci()`) it fails them. Hypothesis runs derandomised in CI (the "ci" profile).
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote

import psycopg
import pytest
from hypothesis import HealthCheck, settings
from tests.cli_corpus import PROJECT as PROJECT_CORPUS
from tests.cli_corpus import Corpus, compat_corpus
from tests.migrated_template import postgres_copy, sqlite_copy
from tests.waiting import WAIT_SECONDS

from valuerank.db import Database, create_database
from valuerank.orgs import ensure_org

PG_URL = os.environ.get("VALUERANK_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
COMPAT_ENV = "VALUERANK_COMPAT_DIR"
FIXTURES = Path(__file__).parent / "fixtures"


def _libpq_url(url: str) -> str:
    """psycopg wants a libpq URL: no SQLAlchemy driver suffix."""
    scheme, rest = url.split("://", 1)
    return "postgresql://" + rest if scheme.startswith("postgres") else url


def is_ci() -> bool:
    """CI=true (or 1, yes, anything else) is CI; unset, empty, 0, false or no is not."""
    return os.environ.get("CI", "").strip().lower() not in {"", "0", "false", "no"}


# CI: the same examples on every run (a failure reproduces; no flake from a new seed), and no
# per-example deadline (a loaded 2-core machine is slow, not wrong). Derandomised, CI would
# draw the same examples every run, so past CI_MAX_EXAMPLES a property test costs CI minutes
# and finds nothing new there. Elsewhere (`dev`): fresh examples at full counts, and no
# deadline either: a developer's machine shared with a build is as slow as CI's, and a
# 200 ms deadline failed correct code there. HYPOTHESIS_PROFILE=ci reproduces CI's examples.
CI_MAX_EXAMPLES = 50
HYPOTHESIS_PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if is_ci() else "dev")
settings.register_profile(
    "dev", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.register_profile(
    "ci",
    max_examples=CI_MAX_EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(HYPOTHESIS_PROFILE)


def examples(count: int) -> int:
    """`max_examples` for a property test: `count`, capped at CI_MAX_EXAMPLES in CI."""
    return min(count, CI_MAX_EXAMPLES) if HYPOTHESIS_PROFILE == "ci" else count


def missing_prerequisite(reason: str) -> NoReturn:
    """A test cannot run here: skip on a developer's partial machine, fail in CI (`is_ci()`),
    where every prerequisite must be present."""
    if is_ci():
        pytest.fail(f"{reason} (CI requires it)")
    pytest.skip(reason)


_pg_checked: str | None = None


def require_postgres() -> None:
    global _pg_checked
    if _pg_checked is None:
        try:
            with psycopg.connect(_libpq_url(PG_URL), connect_timeout=5) as conn:
                conn.execute("select 1")
            _pg_checked = ""
        except psycopg.Error as exc:
            _pg_checked = f"PostgreSQL unreachable at {PG_URL}: {exc}".strip()
    if _pg_checked:
        missing_prerequisite(_pg_checked)


@dataclass
class TestDatabase:
    """A database for one test: the URL the CLI can use, and a ready `Database`."""

    __test__ = False
    backend: str
    url: str
    schema: str = ""  # PostgreSQL: the test's own schema


@contextmanager
def fresh_database(backend: str, directory: Path) -> Iterator[TestDatabase]:
    """An empty database (no tables): a SQLite file in `directory`, or a PostgreSQL schema
    of its own (dropped afterwards; skipped, or failed in CI, when PostgreSQL is unreachable)."""
    if backend == "sqlite":
        yield TestDatabase("sqlite", f"sqlite:///{directory / 'valuerank.db'}")
        return
    require_postgres()
    schema = f"vr_test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(_libpq_url(PG_URL), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in PG_URL else "?"
    try:
        options = quote(f"-csearch_path={schema}")
        yield TestDatabase("postgresql", f"{PG_URL}{sep}options={options}", schema)
    finally:
        with psycopg.connect(_libpq_url(PG_URL), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TestDatabase]:
    """An empty database (no tables) on each backend."""
    with fresh_database(request.param, tmp_path) as database:
        yield database


@pytest.fixture
async def empty_db(database_url: TestDatabase) -> AsyncIterator[Database]:
    db = create_database(database_url.url)
    try:
        yield db
    finally:
        await db.dispose()


@pytest.fixture
async def db(
    empty_db: Database, database_url: TestDatabase, tmp_path_factory: pytest.TempPathFactory
) -> Database:
    """A migrated database: a copy of one this process migrated once (the real migrations;
    see tests/migrated_template.py), made before `empty_db` first connects."""
    if database_url.backend == "sqlite":
        await sqlite_copy(
            Path(database_url.url.removeprefix("sqlite:///")), tmp_path_factory.getbasetemp()
        )
    else:
        await postgres_copy(_libpq_url(PG_URL), database_url.url, database_url.schema)
    return empty_db


@pytest.fixture
async def org_id(db: Database) -> str:
    async with db.transaction() as conn:
        return await ensure_org(conn, "default")


@pytest.fixture
def compat_dir() -> Path:
    """The original CLI's real files, an extra conformance set beside the project's own
    fixtures (`cli_corpus`); tests using them skip where the env var is unset, and fail in CI."""
    value = os.environ.get(COMPAT_ENV)
    if not value:
        missing_prerequisite(
            f"{COMPAT_ENV} is not set: point it at shared/compat/valuerank-cli to run"
        )
    path = Path(value)
    if not path.is_dir():
        pytest.fail(f"{COMPAT_ENV}={value} is not a directory")
    return path


@pytest.fixture(params=["project", pytest.param("compat", marks=pytest.mark.compat)])
def cli_corpus(request: pytest.FixtureRequest) -> Corpus:
    """A corpus of the CLI's formats: the project's own (always), then the CLI's real files
    (`compat_dir`: skipped outside CI when absent, failed in CI)."""
    if request.param == "project":
        return PROJECT_CORPUS
    return compat_corpus(request.getfixturevalue("compat_dir"))


@contextmanager
def serve_on_loopback(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve `handler` on 127.0.0.1 (an ephemeral port) in a thread; yields the base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Receiver:
    """A webhook receiver: a loopback HTTP server that records POSTs and answers with scripted
    status codes (the outside world a webhook delivery reaches)."""

    url: str = ""
    statuses: list[int] = field(default_factory=list)  # popped per request; then `default`
    default: int = 200
    requests: list[tuple[dict[str, str], bytes]] = field(default_factory=list)  # lower-case names
    received: threading.Event = field(default_factory=threading.Event)  # set by every request

    def wait(self, timeout: float = WAIT_SECONDS) -> None:
        """Until a request has arrived (`await asyncio.to_thread(receiver.wait)` in a loop)."""
        if not self.received.wait(timeout):
            pytest.fail(f"no request reached the receiver within {timeout:g} s")


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            state.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
            code = state.statuses.pop(0) if state.statuses else state.default
            self.send_response(code)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
            state.received.set()

        def log_message(self, *args: Any) -> None:
            pass

    with serve_on_loopback(Handler) as base:
        state.url = f"{base}/hook"
        yield state


StaleRun = Callable[..., Awaitable[str]]
DEMO_DEFINITION = Path(__file__).parents[1] / "src/valuerank/demo/exp-demo-whistleblower.md"


async def make_stale_run(
    db: Database, org_id: str, *, write: bool = True, judges: tuple[str, ...] = ()
) -> str:
    """A started run of the demo definition whose probe jobs a real worker ran to the end with
    a handler that — unlike the pipeline's — never enqueues the finalize step (as when a
    probe's last attempt is reaped): the run is left `running` with no job queued or running.
    `write`: each probe stores its transcript and succeeds; else each fails for good.
    `judges`: judge models in the run's config."""
    from valuerank.definitions.service import import_definition
    from valuerank.formats.transcript_md import Transcript, Turn
    from valuerank.queue import Job, Permanent, QueueSettings, Worker
    from valuerank.runs.config import RunConfig
    from valuerank.runs.kinds import PROBE, ProbePayload
    from valuerank.runs.records import TranscriptRecord, insert_transcript
    from valuerank.runs.service import create_run, start_run

    async with db.transaction(immediate=True) as conn:
        stored, _ = await import_definition(conn, org_id, DEMO_DEFINITION.read_text())
        config = RunConfig(
            models=("scripted:utilitarian",),
            judge_models=judges,
            sample_percentage=10,
            sample_seed=0,
        )
        created = await create_run(conn, org_id, stored.version.id, config)
        await start_run(conn, org_id, created.run.id)

    async def probe(job: Job) -> dict[str, Any]:
        if not write:
            raise Permanent("scripted outage: no answer")
        item = ProbePayload.from_payload(job.payload)
        transcript = Transcript(
            run_id=created.run.cli_run_id,
            scenario_id=item.scenario_id,
            target_model=item.model,
            subject="demo",
            turns=(Turn(1, "scenario", "Decide.", "Rating: 4"),),
        )
        record = TranscriptRecord(
            transcript=transcript, model=item.model, decision_code=4, synthetic=True
        )
        async with db.transaction(immediate=True) as conn:
            await insert_transcript(conn, job.org_id, item.run_id, record)
        return {"ok": True}

    settings = QueueSettings(poll_seconds=0.02, heartbeat_seconds=0.05, burst_wait_seconds=0)
    worker = Worker(db, settings=settings, concurrency=4)
    worker.register(PROBE, probe)
    await worker.run_until_idle()
    return created.run.id


@pytest.fixture
def stale_run(db: Database) -> StaleRun:
    """`await stale_run(org_id, write=True, judges=())`: `make_stale_run` on the test's db."""

    async def make(org_id: str, *, write: bool = True, judges: tuple[str, ...] = ()) -> str:
        return await make_stale_run(db, org_id, write=write, judges=judges)

    return make


@pytest.fixture
def stale_run_on() -> Callable[..., Awaitable[str]]:
    """`make_stale_run` itself, for tests that open their own `Database` (sync CLI tests)."""
    return make_stale_run
