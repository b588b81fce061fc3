"""`valuerank webhooks …` on each backend, through the real Typer app: secrets never printed,
everything scoped to the CLI's organisation; deliveries made by the real outbox to a real
loopback HTTP receiver. The `cli_both` tests also ask a live server (whose webhooks must
point at public addresses)."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest
from sqlalchemy import select, update
from standardwebhooks import Webhook
from tests.servers import WorkerProc, start_worker_process
from tests.waiting import wait_until
from typer.testing import CliRunner

from valuerank.cli import app
from valuerank.config import get_settings
from valuerank.crypto import SecretCipher, generate_key
from valuerank.db import Database, create_database
from valuerank.db.tables import outbox, webhooks
from valuerank.orgs import ensure_org
from valuerank.queue.outbox import deliver_due, enqueue_notifications, register_webhook
from valuerank.queue.webhook_signing import SIGNATURE_HEADER

from .conftest import Invoke, Outcome

if TYPE_CHECKING:
    from tests.conftest import Receiver

SECRET = "whsec-cli-test-do-not-print-9f8e7d"
# A public address (a server refuses loopback and private targets, and names that do not
# resolve); nothing is delivered to it in these tests.
PUBLIC = "https://93.184.216.34"
T = TypeVar("T")


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VALUERANK_SECRET_KEY", raising=False)


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    value = generate_key()
    monkeypatch.setenv("VALUERANK_SECRET_KEY", value)
    return value


def _with_input(text: str, *args: str) -> Outcome:
    get_settings.cache_clear()
    result = CliRunner().invoke(app, list(args), input=text, catch_exceptions=False)
    return Outcome(result.exit_code, result.stdout, result.stderr)


def _never_shows(out: Outcome, *secrets: str) -> None:
    for secret in secrets:
        assert secret not in out.stdout and secret not in out.stderr


def _on_db(database_url: Any, work: Callable[[Database, str], Awaitable[T]]) -> T:
    """Run `work(db, org_id)` on the CLI's database, in the CLI's organisation, through the
    real services (to make deliveries, or to look at what the CLI stored)."""

    async def _go() -> T:
        db = create_database(database_url.url)
        try:
            async with db.transaction() as conn:
                org_id = await ensure_org(conn, get_settings().default_org)
            return await work(db, org_id)
        finally:
            await db.dispose()

    return asyncio.run(_go())


def test_add_with_a_secret_from_stdin_then_list(
    cli: Invoke, key: str, database_url: Any, receiver: Receiver
) -> None:
    out = _with_input(
        SECRET + "\n",
        "webhooks",
        "add",
        receiver.url,
        "--event",
        "task_complete",
        "--secret-stdin",
        "--json",
    )
    assert out.exit_code == 0, out.stderr
    _never_shows(out, SECRET, key)
    hook = out.json()
    assert set(hook) == {"id", "url", "event_types", "active", "has_secret", "created_at"}
    assert hook["has_secret"] is True and hook["active"] is True
    assert hook["event_types"] == ["task_complete"] and hook["url"] == receiver.url

    for args in (("webhooks", "list", "--json"), ("webhooks", "list")):
        listed = cli(*args)
        assert listed.exit_code == 0, listed.stderr
        _never_shows(listed, SECRET, key)
    [item] = cli("webhooks", "list", "--json").json()
    assert item == hook
    table = cli("webhooks", "list")
    assert hook["id"] in table.stdout and "active  signed  task_complete" in table.stdout
    assert receiver.url in table.stdout

    async def stored(db: Database, org_id: str) -> str:
        async with db.transaction() as conn:
            return str(
                await conn.scalar(
                    select(webhooks.c.secret_encrypted).where(webhooks.c.id == hook["id"])
                )
            )

    token = _on_db(database_url, stored)
    assert SECRET not in token and SecretCipher(key).decrypt(token) == SECRET

    # What the CLI stored signs real deliveries (the newline of stdin is not part of it).
    async def deliver(db: Database, org_id: str) -> None:
        async with db.transaction() as conn:
            await enqueue_notifications(conn, org_id, "task_complete", {"n": 1})
        report = await deliver_due(db, limit=10, timeout=5, cipher=SecretCipher(key))
        assert report.delivered == 1

    _on_db(database_url, deliver)
    ((headers, body),) = receiver.requests
    Webhook(SECRET.encode()).verify(body, headers)


def test_add_with_the_hidden_prompt_and_without_a_secret(cli: Invoke, key: str) -> None:
    out = _with_input(
        SECRET + "\n", "webhooks", "add", "https://example.invalid/a", "--secret-prompt"
    )
    assert out.exit_code == 0, out.stderr
    assert "Signing secret" in out.stdout and "signed" in out.stdout
    assert SIGNATURE_HEADER in out.stdout
    _never_shows(out, SECRET, key)
    plain = cli("webhooks", "add", "https://example.invalid/b", "--json")
    assert plain.exit_code == 0, plain.stderr
    assert plain.json()["has_secret"] is False and plain.json()["event_types"] == []
    listed = {h["url"]: h["has_secret"] for h in cli("webhooks", "list", "--json").json()}
    assert listed == {"https://example.invalid/a": True, "https://example.invalid/b": False}


def test_a_secret_without_a_key_is_refused_and_nothing_is_written(cli: Invoke) -> None:
    out = _with_input(
        SECRET + "\n", "webhooks", "add", "https://example.invalid/a", "--secret-stdin", "--json"
    )
    assert out.exit_code == 1
    data = out.json()
    assert data["code"] == "SECRET_KEY_MISSING" and "VALUERANK_SECRET_KEY" in data["error"]
    assert "valuerank credentials keygen" in data["hint"]
    _never_shows(out, SECRET)
    text = _with_input(
        SECRET + "\n", "webhooks", "add", "https://example.invalid/a", "--secret-prompt"
    )
    assert text.exit_code == 1 and "VALUERANK_SECRET_KEY" in text.stderr
    assert "Signing secret" not in text.stdout  # refused before the prompt
    _never_shows(text, SECRET)
    assert cli("webhooks", "list", "--json").json() == []
    # A webhook without a secret needs no key.
    assert cli("webhooks", "add", "https://example.invalid/b").exit_code == 0


@pytest.mark.parametrize(
    ("args", "stdin", "code"),
    [
        (("webhooks", "add", "ftp://example.invalid/x"), "", "INVALID_INPUT"),
        (("webhooks", "add", "https://e.invalid/x", "--secret-stdin"), "\n", "INVALID_INPUT"),
        (
            ("webhooks", "add", "https://e.invalid/x", "--secret-stdin", "--secret-prompt"),
            SECRET + "\n",
            "INVALID_INPUT",
        ),
        (("webhooks", "remove", "no-such-webhook"), "", "NOT_FOUND"),
        (("webhooks", "retry", "no-such-delivery"), "", "NOTIFICATION_NOT_FOUND"),
        (("webhooks", "deliveries", "--webhook", "no-such-webhook"), "", "NOT_FOUND"),
    ],
)
def test_errors_exit_1_with_a_code_and_a_hint(
    cli: Invoke, key: str, args: tuple[str, ...], stdin: str, code: str
) -> None:
    out = _with_input(stdin, *args, "--json")
    assert out.exit_code == 1
    data = out.json()
    assert data["success"] is False and data["code"] == code and data.get("hint")
    _never_shows(out, SECRET)
    text = _with_input(stdin, *args)
    assert text.exit_code == 1 and "error:" in text.stderr and "hint:" in text.stderr
    _never_shows(text, SECRET)


def test_deliveries_filters_dead_letters_and_retry(
    cli: Invoke, key: str, database_url: Any, receiver: Receiver
) -> None:
    first = cli("webhooks", "add", receiver.url, "--json").json()["id"]
    second = cli("webhooks", "add", receiver.url, "--event", "b", "--json").json()["id"]
    receiver.statuses = [410]  # the first delivery attempted is refused: with one attempt, dead

    async def notify(db: Database, org_id: str) -> None:
        async with db.transaction() as conn:
            await enqueue_notifications(conn, org_id, "a", {"n": 1}, max_attempts=1)
        assert (await deliver_due(db, limit=1, timeout=5)).dead == 1
        async with db.transaction() as conn:
            await enqueue_notifications(conn, org_id, "b", {"n": 2})  # both webhooks
        report = await deliver_due(db, limit=1, timeout=5)
        assert report.delivered == 1  # one of the two; the other stays pending

    _on_db(database_url, notify)
    every = cli("webhooks", "deliveries", "--json")
    assert every.exit_code == 0, every.stderr
    rows = every.json()
    assert sorted(r["status"] for r in rows) == ["dead", "delivered", "pending"]
    (dead,) = [r for r in rows if r["status"] == "dead"]
    assert dead["topic"] == "a" and dead["webhook_id"] == first
    assert dead["last_status_code"] == 410 and "HTTP 410" in dead["last_error"]

    def ids(*args: str) -> set[str]:
        out = cli("webhooks", "deliveries", *args, "--json")
        assert out.exit_code == 0, out.stderr
        return {r["id"] for r in out.json()}

    assert ids("--status", "dead") == {dead["id"]}
    assert len(ids("--status", "pending", "--status", "delivered")) == 2
    assert ids("--webhook", second) == {r["id"] for r in rows if r["webhook_id"] == second}
    assert len(ids("--webhook", first)) == 2
    assert ids("--webhook", first, "--status", "dead") == {dead["id"]}
    assert len(ids("--topic", "b")) == 2
    assert len(ids("--limit", "1")) == 1
    bad = cli("webhooks", "deliveries", "--status", "lost")
    assert bad.exit_code != 0
    table = cli("webhooks", "deliveries")
    assert table.exit_code == 0 and dead["id"] in table.stdout and "dead" in table.stdout

    letters = cli("webhooks", "dead-letters", "--json")
    assert letters.exit_code == 0, letters.stderr
    [group] = letters.json()
    assert (group["topic"], group["webhook_id"], group["count"]) == ("a", first, 1)
    assert "HTTP 410" in group["last_error"]
    assert "retry" in cli("webhooks", "dead-letters").stdout

    retried = cli("webhooks", "retry", dead["id"], "--json")
    assert retried.exit_code == 0, retried.stderr
    assert retried.json()["status"] == "pending" and retried.json()["attempts"] == 0
    assert dead["id"] in ids("--status", "pending")
    assert cli("webhooks", "dead-letters", "--json").json() == []
    again = cli("webhooks", "retry", dead["id"], "--json")  # not dead any more
    assert again.exit_code == 1 and again.json()["code"] == "INVALID_INPUT"
    text = cli("webhooks", "retry", dead["id"])
    assert text.exit_code == 1 and "not dead" in text.stderr


def test_another_organisations_ids_are_not_found(
    key: str, cli_both: Invoke, database_url: Any
) -> None:
    cli = cli_both
    mine = cli("webhooks", "add", f"{PUBLIC}/mine", "--json").json()["id"]

    async def other_org(db: Database, org_id: str) -> tuple[str, str]:
        async with db.transaction() as conn:
            other = await ensure_org(conn, "other")
            hook = await register_webhook(
                conn,
                other,
                "https://example.invalid/theirs",
                secret=SECRET,
                cipher=SecretCipher(generate_key()),
            )
            (delivery,) = await enqueue_notifications(conn, other, "t", {}, max_attempts=1)
        return hook.id, delivery

    theirs, their_delivery = _on_db(database_url, other_org)
    listed = cli("webhooks", "list", "--json").json()
    assert [h["id"] for h in listed] == [mine]
    assert cli("webhooks", "deliveries", "--json").json() == []
    for args in (
        ("webhooks", "remove", theirs),
        ("webhooks", "deliveries", "--webhook", theirs),
        ("webhooks", "retry", their_delivery),
    ):
        out = cli(*args, "--json")
        assert out.exit_code == 1, args
        assert out.json()["code"].endswith("NOT_FOUND")  # NOTIFICATION_NOT_FOUND for retry
    # Theirs is untouched; mine can be removed.
    removed = cli("webhooks", "remove", mine, "--json")
    assert removed.exit_code == 0 and removed.json() == {"id": mine, "removed": True}
    assert cli("webhooks", "list", "--json").json() == []
    assert "no webhooks" in cli("webhooks", "list").stdout

    async def count(db: Database, org_id: str) -> int:
        async with db.transaction() as conn:
            return len((await conn.execute(select(webhooks.c.id))).all())

    assert _on_db(database_url, count) == 1


def _start_worker(database_url: Any, key: str, log: Path) -> WorkerProc:
    """A real `valuerank worker` process that drains the outbox every 0.1 s."""
    env = {
        **os.environ,
        "VALUERANK_DATABASE_URL": database_url.url,
        "VALUERANK_SECRET_KEY": key,
        "VALUERANK_WORKER_POLL_SECONDS": "0.05",
        "VALUERANK_WORKER_NOTIFICATION_DRAIN_SECONDS": "0.1",
        "VALUERANK_WORKER_SHUTDOWN_GRACE_SECONDS": "2",
    }
    return start_worker_process(env, worker_id="webhooks", log_path=log)


def _stop(worker: WorkerProc) -> str:
    """Stops it (SIGTERM: a clean exit); its stdout."""
    if worker.proc.poll() is None:
        worker.signal(signal.SIGTERM)
    try:
        code, _ = worker.finish()
    finally:
        worker.stop()  # killed if SIGTERM did not end it
    assert code == 0
    return worker.output()


@pytest.mark.parametrize("worker_key", ["same", "other"])
def test_the_worker_process_signs_with_the_key_or_sends_nothing(
    cli: Invoke, key: str, database_url: Any, receiver: Receiver, tmp_path: Path, worker_key: str
) -> None:
    """`valuerank worker` builds its cipher from VALUERANK_SECRET_KEY: with the key the secret
    was stored with it signs; with another key it sends nothing and records why."""
    added = _with_input(
        SECRET + "\n", "webhooks", "add", receiver.url, "--event", "task_complete", "--secret-stdin"
    )
    assert added.exit_code == 0, added.stderr
    assert cli("queue", "enqueue", "noop").exit_code == 0
    log = tmp_path / "worker.log"
    proc = _start_worker(database_url, key if worker_key == "same" else generate_key(), log)
    try:
        if worker_key == "same":
            receiver.wait()  # a signed delivery
        else:

            def failed() -> bool:
                rows = cli("webhooks", "deliveries", "--json").json()
                return bool(rows) and bool(rows[0]["last_error"])

            wait_until(failed, what="a failed delivery attempt", interval=0.1)
    finally:
        out = _stop(proc)
    for text in (out, log.read_text()):
        assert SECRET not in text and key not in text
    if worker_key == "same":
        ((headers, body),) = receiver.requests
        Webhook(SECRET.encode()).verify(body, headers)
        return
    assert receiver.requests == []
    (row,) = cli("webhooks", "deliveries", "--json").json()
    assert row["status"] == "pending" and row["last_status_code"] is None
    assert row["last_error"].startswith("not sent:") and "VALUERANK_SECRET_KEY" in row["last_error"]
    assert SECRET not in row["last_error"]


def test_add_list_and_remove_both_ways(key: str, cli_both: Invoke, db: Database) -> None:
    out = _with_input(
        SECRET + "\n", "webhooks", "add", f"{PUBLIC}/a", "--event", "task_complete",
        "--secret-stdin", "--json",
    )  # fmt: skip
    assert out.exit_code == 0, out.stdout + out.stderr
    _never_shows(out, SECRET, key)
    hook = out.json()
    assert set(hook) == {"id", "url", "event_types", "active", "has_secret", "created_at"}
    assert hook["has_secret"] is True and hook["event_types"] == ["task_complete"]
    plain = cli_both("webhooks", "add", f"{PUBLIC}/b")
    assert plain.exit_code == 0 and "unsigned" in plain.stdout, plain.stdout + plain.stderr
    listed = cli_both("webhooks", "list", "--json")
    _never_shows(listed, SECRET, key)
    assert {h["url"]: h["has_secret"] for h in listed.json()} == {
        f"{PUBLIC}/a": True,
        f"{PUBLIC}/b": False,
    }
    table = cli_both("webhooks", "list")
    assert hook["id"] in table.stdout and "active  signed  task_complete" in table.stdout

    async def stored() -> str:
        async with db.transaction() as conn:
            return str(
                await conn.scalar(
                    select(webhooks.c.secret_encrypted).where(webhooks.c.id == hook["id"])
                )
            )

    assert SecretCipher(key).decrypt(asyncio.run(stored())) == SECRET  # kept, encrypted
    removed = cli_both("webhooks", "remove", hook["id"])
    assert removed.exit_code == 0 and f"removed webhook {hook['id']}" in removed.stdout
    assert [h["url"] for h in cli_both("webhooks", "list", "--json").json()] == [f"{PUBLIC}/b"]


def test_deliveries_dead_letters_and_retry_both_ways(
    cli_both: Invoke, db: Database, org_id: str
) -> None:
    first = cli_both("webhooks", "add", f"{PUBLIC}/1", "--json").json()["id"]
    second = cli_both(
        "webhooks", "add", f"{PUBLIC}/2", "--event", "task_complete", "--json"
    ).json()["id"]

    async def notify() -> str:
        async with db.transaction() as conn:
            (dead,) = await enqueue_notifications(conn, org_id, "a", {"n": 1}, max_attempts=1)
            await enqueue_notifications(conn, org_id, "task_complete", {"n": 2})  # both
            # As the outbox leaves one its receiver refused (delivering needs the network).
            await conn.execute(
                update(outbox)
                .where(outbox.c.id == dead)
                .values(status="dead", attempts=1, last_error="HTTP 410", last_status_code=410)
            )
        return str(dead)

    dead = asyncio.run(notify())
    rows = cli_both("webhooks", "deliveries", "--json").json()
    assert sorted(r["status"] for r in rows) == ["dead", "pending", "pending"]
    assert [r["id"] for r in rows] == sorted((r["id"] for r in rows), reverse=True)

    def ids(*args: str) -> set[str]:
        out = cli_both("webhooks", "deliveries", *args, "--json")
        assert out.exit_code == 0, out.stdout + out.stderr
        return {r["id"] for r in out.json()}

    assert ids("--status", "dead") == {dead}
    assert len(ids("--status", "pending", "--status", "dead")) == 3
    assert len(ids("--webhook", second)) == 1 and ids("--webhook", first, "--topic", "a") == {dead}
    assert len(ids("--limit", "2")) == 2
    table = cli_both("webhooks", "deliveries", "--status", "dead")
    assert dead in table.stdout and "HTTP 410" in table.stdout

    [group] = cli_both("webhooks", "dead-letters", "--json").json()
    assert (group["topic"], group["webhook_id"], group["count"]) == ("a", first, 1)
    assert "retry" in cli_both("webhooks", "dead-letters").stdout
    retried = cli_both("webhooks", "retry", dead, "--json")
    assert retried.exit_code == 0, retried.stdout + retried.stderr
    assert retried.json()["status"] == "pending" and retried.json()["attempts"] == 0
    assert cli_both("webhooks", "dead-letters", "--json").json() == []
    again = cli_both("webhooks", "retry", dead, "--json")  # not dead any more
    assert again.exit_code == 1 and again.json()["code"] == "INVALID_INPUT"


def test_errors_both_ways(key: str, cli_both: Invoke) -> None:
    for args, stdin, code in [
        (("webhooks", "add", "ftp://example.invalid/x"), "", "INVALID_INPUT"),
        (("webhooks", "add", f"{PUBLIC}/x", "--secret-stdin"), "\n", "INVALID_INPUT"),
        (("webhooks", "remove", "no-such-webhook"), "", "NOT_FOUND"),
        (("webhooks", "retry", "no-such-delivery"), "", "NOTIFICATION_NOT_FOUND"),
        (("webhooks", "deliveries", "--webhook", "no-such-webhook"), "", "NOT_FOUND"),
    ]:
        out = _with_input(stdin, *args, "--json")
        assert out.exit_code == 1, (args, out.stdout)
        assert out.json()["code"] == code, (args, out.stdout)
    assert cli_both("webhooks", "list", "--json").json() == []  # nothing half-written
