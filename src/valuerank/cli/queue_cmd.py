"""`valuerank queue …`: status, pause/resume, enqueue, retry-failed — the operator's view."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

import typer
from rich.table import Table

from valuerank.cli import caps_cmd, limits_cmd
from valuerank.cli.common import (
    JsonOption,
    console,
    fail,
    local_or_server,
    print_json,
    run,
    session,
)
from valuerank.client import admin as remote
from valuerank.queue import (
    JobSpec,
    enqueue_many,
    pause_provider,
    pause_queue,
    queue_status,
    requeue_failed,
    resume_provider,
    resume_queue,
)
from valuerank.shapes import dump

app = typer.Typer(help="The job queue: status, pause/resume, enqueue, retry.", no_args_is_help=True)
app.add_typer(limits_cmd.app, name="limits")
app.add_typer(caps_cmd.app, name="caps")


class Priority(StrEnum):
    low = "low"
    normal = "normal"
    high = "high"


ProviderOption = typer.Option(
    None, "--provider", help="Only this provider's jobs (default: the whole queue)."
)


@app.command("status")
def status(
    all_orgs: bool = typer.Option(
        False, "--all-orgs", help="Count every organisation's jobs, not only this install's."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Counts per state, per provider and per live partition; the oldest waiting job.

    With VALUERANK_API_URL set, the server there answers (--all-orgs: an admin of its
    default organisation), not the database."""

    async def _go() -> dict[str, Any]:
        async with session() as s:
            result = await queue_status(s.conn, org_id=None if all_orgs else s.org_id)
        return dump(result)  # type: ignore[no-any-return]

    data = local_or_server(
        _go, lambda server: remote.queue_status(server, all_orgs=all_orgs), as_json=as_json
    )
    if as_json:
        print_json(data)
        return
    state = "[red]paused[/]" if data["paused"] else "[green]running[/]"
    oldest = data["oldest_waiting_seconds"]
    console.print(f"queue {state}; oldest waiting: {'-' if oldest is None else f'{oldest:.1f} s'}")
    console.print("  ".join(f"{k}: {v}" for k, v in data["counts"].items()))
    if data["providers"]:
        table = Table(
            "provider",
            "queued",
            "in flight",
            "paused",
            "rate limit",
            "blocked until",
            title="providers",
        )
        for name, p in data["providers"].items():
            table.add_row(
                name,
                str(p["queue_length"]),
                str(p["in_flight"]),
                str(p["paused"]),
                p["rate_limit"],
                p["blocked_until"] or "-",
            )
        console.print(table)
    if data["partitions"]:
        table = Table("partition", "counts", "paused", "cancelled", title="partitions")
        for name, p in data["partitions"].items():
            counts = ", ".join(f"{k} {v}" for k, v in sorted(p["counts"].items()))
            table.add_row(name, counts, str(p["paused"]), str(p["cancelled"]))
        console.print(table)
    for cap in data["caps"]:
        console.print(f"cap {cap}")


def _toggle(paused: bool, provider: str | None, as_json: bool) -> None:
    async def _go() -> bool:
        async with session() as s:
            if provider is None:
                return await (pause_queue(s.conn) if paused else resume_queue(s.conn))
            return await (
                pause_provider(s.conn, provider) if paused else resume_provider(s.conn, provider)
            )

    changed = local_or_server(
        _go, lambda server: remote.toggle(server, paused=paused, provider=provider), as_json=as_json
    )
    target = "queue" if provider is None else f"provider {provider}"
    verb = "paused" if paused else "resumed"
    if as_json:
        print_json({"target": target, "paused": paused, "changed": changed})
    elif changed:
        console.print(f"{target} {verb}")
    else:
        console.print(f"{target} was already {verb}: nothing changed")


@app.command("pause")
def pause(provider: str | None = ProviderOption, as_json: bool = JsonOption) -> None:
    """Stop claiming (running jobs finish): every organisation's jobs, or a provider's.

    With VALUERANK_API_URL set, the server there pauses (an admin of its default
    organisation)."""
    _toggle(True, provider, as_json)


@app.command("resume")
def resume(provider: str | None = ProviderOption, as_json: bool = JsonOption) -> None:
    """Claim again after a pause.

    With VALUERANK_API_URL set, the server there resumes (an admin of its default
    organisation)."""
    _toggle(False, provider, as_json)


@app.command("enqueue")
def enqueue_(
    kind: str = typer.Argument(
        ..., help="Job kind, e.g. noop, sleep, fail (the seed's probe:scenario is probe)."
    ),
    payload: str = typer.Option("{}", "--payload", help="The job's payload, a JSON object."),
    partition: str | None = typer.Option(None, "--partition", help="Partition (e.g. a run id)."),
    item_key: str | None = typer.Option(
        None, "--item-key", help="Idempotency key (with --count N: KEY-0 … KEY-N-1)."
    ),
    priority: str = typer.Option(
        Priority.normal.value, "--priority", help="low, normal or high.", show_default=True
    ),
    provider: str | None = typer.Option(None, "--provider", help="Provider label."),
    model: str | None = typer.Option(None, "--model", help="Model label."),
    count: int = typer.Option(1, "--count", min=1, help="How many jobs."),
    max_attempts: int = typer.Option(3, "--max-attempts", min=1, help="Attempts before failed."),
    as_json: bool = JsonOption,
) -> None:
    """Put jobs on the queue (idempotent with --item-key).

    Works on the database only, never through a server: raw jobs skip every check run
    creation makes, so the API offers runs, not jobs."""
    from valuerank.runs.kinds import job_kind  # here: the other queue commands need no runs

    kind = job_kind(kind)
    choices = [p.value for p in Priority]
    if priority not in choices:
        fail(
            f"unknown --priority {priority!r}: use one of {', '.join(choices)}",
            code="INVALID_INPUT",
            as_json=as_json,
        )
    try:
        body = json.loads(payload)
    except json.JSONDecodeError as exc:
        fail(f"--payload is not JSON: {exc}", code="INVALID_INPUT", as_json=as_json)
    if not isinstance(body, dict):
        fail("--payload must be a JSON object", code="INVALID_INPUT", as_json=as_json)

    def key(i: int) -> str | None:
        if item_key is None or count == 1:
            return item_key
        return f"{item_key}-{i}"

    async def _go() -> list[dict[str, Any]]:
        async with session(local_only=True) as s:
            specs = [
                JobSpec(
                    kind=kind,
                    org_id=s.org_id,
                    payload=body,
                    partition=partition,
                    item_key=key(i),
                    priority=priority,
                    provider=provider,
                    model=model,
                    max_attempts=max_attempts,
                )
                for i in range(count)
            ]
            results = await enqueue_many(s.conn, specs)
        return [
            {
                "job_id": r.job_id,
                "partition": r.partition,
                "item_key": r.item_key,
                "enqueued": r.enqueued,
            }
            for r in results
        ]

    jobs = run(_go(), as_json=as_json)
    added = sum(1 for j in jobs if j["enqueued"])
    if as_json:
        print_json({"kind": kind, "enqueued": added, "existing": len(jobs) - added, "jobs": jobs})
        return
    console.print(f"enqueued {added} {kind} job(s), {len(jobs) - added} already there")
    for j in jobs[:20]:
        mark = "" if j["enqueued"] else " [dim](existing)[/]"
        console.print(f"  {j['job_id']} {j['partition']}/{j['item_key']}{mark}")
    if len(jobs) > 20:
        console.print(f"  … and {len(jobs) - 20} more")


@app.command("retry-failed")
def retry_failed(
    partition: str | None = typer.Option(None, "--partition", help="Every failed job in it."),
    job: str | None = typer.Option(None, "--job", help="One failed job."),
    as_json: bool = JsonOption,
) -> None:
    """Send failed jobs back to the queue with a fresh attempt budget.

    With VALUERANK_API_URL set, the server there requeues them (--job: a run's job also
    reopens its run, as `runs rerun-failed` does)."""
    if (partition is None) == (job is None):
        fail("give --partition P or --job ID (one of them)", code="INVALID_INPUT", as_json=as_json)

    async def _go() -> list[str]:
        async with session() as s:
            return await requeue_failed(s.conn, s.org_id, job_id=job, partition=partition)

    ids = local_or_server(
        _go,
        lambda server: remote.retry_failed(server, job=job, partition=partition),
        as_json=as_json,
    )
    if as_json:
        print_json({"requeued": len(ids), "job_ids": ids})
    else:
        console.print(f"requeued {len(ids)} failed job(s)")


class SqlShape(StrEnum):
    all = "all"
    general = "general"
    fast = "fast"
    alone = "alone"


class SqlDialect(StrEnum):
    postgresql = "postgresql"
    sqlite = "sqlite"


@app.command("sql")
def sql(
    shape: SqlShape = typer.Option(
        SqlShape.all,
        "--shape",
        help="PostgreSQL: general (caps or rate limits apply), fast (none do, events written "
        "in the same statement), alone (fast, run in autocommit) or all.",
    ),
    n: int = typer.Option(8, "-n", "--jobs", min=1, help="Jobs to claim."),
    kinds: list[str] | None = typer.Option(
        None, "--kind", help="A kind the claimer runs (repeat it; default: any kind)."
    ),
    window: int | None = typer.Option(
        None, "--window", min=1, help="Candidates read per partition (default: n + the slack)."
    ),
    dialect: SqlDialect = typer.Option(SqlDialect.postgresql, "--dialect"),
    compact: bool = typer.Option(
        False, "--compact", help="Exactly the text sent: one line, no comments."
    ),
) -> None:
    """Print the claiming statement(s) a worker runs, part by part with comments (needs no
    database). `:worker_id` and `:lease_seconds` stay parameters."""
    # Here: the claim's statements load SQLAlchemy's compiler, which no other command needs.
    from valuerank.queue.claim_pg import ClaimShape, statement_text
    from valuerank.queue.claim_sql import claim_statement, claim_window, pg_sql
    from valuerank.queue.settings import QueueSettings

    kinds_key = None if not kinds else tuple(kinds)
    if dialect is SqlDialect.sqlite:
        from sqlalchemy.dialects import sqlite

        statement = claim_statement(
            "sqlite", n=n, worker_id=":worker_id", lease_seconds=30.0, kinds=kinds
        )
        compiled = statement.compile(
            dialect=sqlite.dialect(), compile_kwargs={"literal_binds": True}
        )
        typer.echo(str(compiled).replace("':worker_id'", ":worker_id"))
        return
    slack = QueueSettings.model_fields["claim_window_slack"].default
    width = window if window is not None else claim_window(n, 0, slack)
    shapes = list(ClaimShape) if shape is SqlShape.all else [ClaimShape(shape.value)]
    for i, one in enumerate(shapes):
        if i:
            typer.echo("")
        if compact:
            typer.echo(pg_sql(one, n, kinds_key, width) + ";")
            continue
        typer.echo(f"-- {one.value}: claim up to {n} job(s), {width} candidate(s) per partition")
        typer.echo(statement_text(one, n, kinds_key, width, comments=True) + ";")
