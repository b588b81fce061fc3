"""`valuerank runs …`: create a run, watch it, steer it (pause, resume, cancel, rerun, expand)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import typer
from pydantic import TypeAdapter
from rich.table import Table

from valuerank.cli import runs_create_cmd, runs_judge_cmd
from valuerank.cli.common import (
    JsonOption,
    api_client,
    ask,
    console,
    database,
    local_or_server,
    print_json,
    run,
    session,
)
from valuerank.cli.live import (
    in_process_worker,
    report_json,
    report_keys,
    results_table,
    wait_for_run,
    watch_run,
)
from valuerank.cli.local_options import refuse_option
from valuerank.client import ApiClient, ApiError
from valuerank.client import runs as remote_runs
from valuerank.client.runs import print_status_from, run_status
from valuerank.config import get_settings
from valuerank.refs import short_id
from valuerank.runs import service
from valuerank.runs.progress import run_report
from valuerank.runs.results import ModelResult, model_results
from valuerank.runs.states import RunStatus, refuse
from valuerank.shapes import dump
from valuerank.terminal import print_run_status

app = typer.Typer(help="Runs: send a definition's scenarios to models.", no_args_is_help=True)
RunArg = typer.Argument(..., help="Run id or prefix.")
runs_create_cmd.register(app)  # `runs create`, in its own module
SERVER_WORKER_HINT = "The server's workers run the jobs: is one running there?"


@app.command("list")
def list_runs(as_json: bool = JsonOption) -> None:
    """The organisation's 100 newest runs, newest first.

    With VALUERANK_API_URL set, the server there answers (its GET /api/runs: the same
    fields and more), not the database."""

    async def _go() -> list[dict[str, Any]]:
        async with session() as s:
            return [r.summary_dict() for r in await service.list_runs(s.conn, s.org_id)]

    server = api_client(get_settings())
    rows = (
        ask(server, remote_runs.list_runs, as_json=as_json)
        if server
        else run(_go(), as_json=as_json)
    )
    if as_json:
        print_json(rows)
        return
    table = Table(title="Runs")
    for column in ("id", "name", "status", "models", "origin", "created"):
        table.add_column(column)
    for r in rows:
        table.add_row(
            short_id(r["id"]),
            r["name"],
            r["status"],
            ", ".join(r["models"]),
            r["origin"],
            r["created_at"],
        )
    console.print(table)


@app.command("status")
def status(
    run_id: str = typer.Argument(..., help="Run id or prefix."), as_json: bool = JsonOption
) -> None:
    """Status, progress {total, queued, running, completed, failed, cancelled}, cost, ETA.

    With VALUERANK_API_URL set, the server there answers (its GET /api/runs/{id}: the same
    fields and more), not the database."""
    server = api_client(get_settings())
    if server is not None:
        raise typer.Exit(print_status_from(server, run_id, as_json=as_json))

    async def _go() -> dict[str, Any]:
        from valuerank.default_rubric import run_judge_rubric

        async with database() as opened, opened.db.snapshot() as conn:  # a read: no write
            report = await run_report(conn, opened.org_id, run_id)
            results = await model_results(conn, opened.org_id, report.run.id)
            rubric = await run_judge_rubric(conn, opened.org_id, report.run.rubric_id)
        # The rubric its judges read, as GET /api/runs/{id} names it.
        return {**report_json(report, results), "rubric": rubric and dump(rubric)}

    print_run_status(run(_go(), as_json=as_json), as_json=as_json)


@app.command("results")
def results(
    run_id: str = typer.Argument(..., help="Run id or prefix."), as_json: bool = JsonOption
) -> None:
    """How each model decided: transcripts, decisions 1–5, refusals, mean, cost.

    With VALUERANK_API_URL set, the server there answers, not the database."""

    async def _go() -> dict[str, Any]:
        async with session() as s:
            r = await service.get_run(s.conn, s.org_id, run_id)
            rows = await model_results(s.conn, s.org_id, r.id)
        return {"id": r.id, "summary": r.summary, "results": dump(rows)}

    server = api_client(get_settings())
    if server is not None:
        detail = ask(server, lambda c: run_status(c, run_id), as_json=as_json)
        data = {key: detail[key] for key in ("id", "summary", "results")}
    else:
        data = run(_go(), as_json=as_json)
    if as_json:
        print_json(data)
        return
    console.print(results_table(TypeAdapter(list[ModelResult]).validate_python(data["results"])))
    if data["summary"]:
        console.print(data["summary"])


@app.command("wait")
def wait(
    run_id: str = typer.Argument(..., help="Run id or prefix."),
    timeout: float | None = typer.Option(
        None, "--timeout", help="Give up after S seconds (exit 2)."
    ),
    work: bool = typer.Option(
        False, "--work", help="Also run the jobs in this process (embedded, one host)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Show a live progress bar until the run ends (exit 0), or the timeout passes (exit 2).

    With VALUERANK_API_URL set, it polls the server there (its GET /api/runs/{id}), whose
    workers run the jobs: --work is refused (LOCAL_ONLY_OPTION)."""
    show = not as_json

    async def _go() -> tuple[dict[str, Any], bool]:
        async with database() as opened:
            db, org_id = opened.db, opened.org_id
            async with db.transaction() as conn:
                found = await service.get_run(conn, org_id, run_id)
            if work:
                async with in_process_worker(db):
                    final, ended = await wait_for_run(
                        db, org_id, found.id, timeout=timeout, show=show
                    )
            else:
                final, ended = await wait_for_run(db, org_id, found.id, timeout=timeout, show=show)
        return report_json(final), ended

    server = api_client(get_settings())
    if server is None:
        data, ended = run(_go(), as_json=as_json)
    elif work:
        refuse_option(
            server,
            "--work",
            "runs the jobs in this process, on the database",
            hint="the server's own workers run the jobs: wait without --work (or unset "
            "VALUERANK_API_URL to work on a database here)",
            as_json=as_json,
        )
    else:
        data, ended = ask(
            server, lambda c: _wait_remote(c, run_id, timeout=timeout, show=show), as_json=as_json
        )
    if as_json:
        print_json(data)
    elif ended:
        console.print(f"run {short_id(data['id'])} {data['status']}")
    if not ended:
        if not as_json:
            console.print(f"[yellow]still {data['status']} after {timeout:g} s[/]")
        raise typer.Exit(2)


def _wait_remote(
    client: ApiClient, ref: str, *, timeout: float | None, show: bool
) -> tuple[dict[str, Any], bool]:
    """`watch_run` on the server's reports of the run (the first read resolves `ref`); the
    last one as `report_json` gives it."""
    first = [run_status(client, ref)]
    full_id = first[0]["id"]

    async def read() -> dict[str, Any]:
        return first.pop() if first else await asyncio.to_thread(run_status, client, full_id)

    final, ended = asyncio.run(
        watch_run(read, timeout=timeout, show=show, idle_hint=SERVER_WORKER_HINT)
    )
    return {key: final[key] for key in report_keys() if key in final}, ended


def _steer(
    action: Callable[[Any, str, str], Awaitable[service.Run]],
    name: str,
    run_id: str,
    as_json: bool,
) -> None:
    """`action` on the run (or the server's POST /api/queue/runs/{id}/`name`)."""

    async def _go() -> dict[str, Any]:
        async with session() as s:
            return (await action(s.conn, s.org_id, run_id)).summary_dict()

    data = local_or_server(_go, lambda c: remote_runs.steer_run(c, run_id, name), as_json=as_json)
    if as_json:
        print_json(data)
    else:
        console.print(f"run {short_id(data['id'])}: {data['status']}")


@app.command("start")
def start(run_id: str = RunArg, as_json: bool = JsonOption) -> None:
    """Start a run created with --no-start (starting twice enqueues nothing new).

    With VALUERANK_API_URL set, the server there starts it, not the database."""

    async def _go() -> dict[str, Any]:
        async with session() as s:
            started = await service.start_run(s.conn, s.org_id, run_id)
        return {**started.run.summary_dict(), "enqueued": started.enqueued}

    data = local_or_server(_go, lambda c: _start_remote(c, run_id), as_json=as_json)
    if as_json:
        print_json(data)
    else:
        console.print(f"run {short_id(data['id'])}: {data['enqueued']} jobs enqueued")


def _start_remote(client: ApiClient, ref: str) -> dict[str, Any]:
    """Start the run through the server's POST /api/eval/runs/{id}/start, which also reruns
    an ended run's failed jobs: `runs start` refuses any run `service.start_run` refuses
    (the state read first), so it means the same both ways."""
    found = run_status(client, ref)
    status = RunStatus(found["status"])
    if status not in service.STARTABLE:
        refused = refuse(found["id"], status, "start")
        raise ApiError(refused.message, code=refused.code, hint=refused.hint)
    started = remote_runs.enqueue_run(client, found["id"])
    summary = {k: v for k, v in started.items() if k not in ("jobs_enqueued", "reopened")}
    return {**summary, "enqueued": started["jobs_enqueued"]}


@app.command("pause")
def pause(run_id: str = RunArg, as_json: bool = JsonOption) -> None:
    """Stop starting the run's jobs; running ones finish. Nothing is lost.

    With VALUERANK_API_URL set, the server there does it, not the database."""
    _steer(service.pause_run, "pause", run_id, as_json)


@app.command("resume")
def resume(run_id: str = RunArg, as_json: bool = JsonOption) -> None:
    """Start the run's jobs again.

    With VALUERANK_API_URL set, the server there does it, not the database."""
    _steer(service.resume_run, "resume", run_id, as_json)


@app.command("cancel")
def cancel(run_id: str = RunArg, as_json: bool = JsonOption) -> None:
    """Cancel queued jobs now; running ones stop at their next heartbeat.

    With VALUERANK_API_URL set, the server there does it, not the database."""
    _steer(service.cancel_run, "cancel", run_id, as_json)


@app.command("rename")
def rename(
    run_id: str = RunArg,
    name: str = typer.Argument(..., help="The new name (quote it if it has spaces)."),
    as_json: bool = JsonOption,
) -> None:
    """Give a run a new name, whatever its state.

    With VALUERANK_API_URL set, the server there renames it (PATCH /api/runs/{id})."""

    async def _go() -> dict[str, Any]:
        async with session() as s:
            return (await service.rename_run(s.conn, s.org_id, run_id, name)).summary_dict()

    data = local_or_server(_go, lambda c: remote_runs.rename_run(c, run_id, name), as_json=as_json)
    if as_json:
        print_json(data)
    else:
        console.print(f"run {short_id(data['id'])} is now named {data['name']!r}", highlight=False)


@app.command("delete")
def delete(
    run_id: str = RunArg,
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask."),
    as_json: bool = JsonOption,
) -> None:
    """Delete a run with all its jobs, events, transcripts and judgments.

    With VALUERANK_API_URL set, the server there deletes it (its DELETE /api/queue/runs/{id}:
    only a run not under way; cancel a running or paused one first), not the database."""
    if not yes and not as_json and not typer.confirm(f"Delete run {run_id} and all its data?"):
        raise typer.Exit(1)

    async def _go() -> dict[str, Any]:
        async with session() as s:
            return {"id": await service.delete_run(s.conn, s.org_id, run_id), "deleted": True}

    data = local_or_server(_go, lambda c: _delete_remote(c, run_id), as_json=as_json)
    if as_json:
        print_json(data)
    else:
        console.print(f"run {short_id(data['id'])} deleted")


def _delete_remote(client: ApiClient, ref: str) -> dict[str, Any]:
    try:
        return remote_runs.delete_run(client, ref)
    except ApiError as exc:
        if exc.code != service.RunActiveError.code:
            raise
        # The API's hint names its route; say it in this CLI's words.
        hint = f"valuerank runs cancel {ref}, then delete it"
        raise ApiError(exc.message, code=exc.code, hint=hint) from None


@app.command("rerun-failed")
def rerun_failed(run_id: str = RunArg, as_json: bool = JsonOption) -> None:
    """Send the run's failed jobs back to the queue with fresh attempts.

    With VALUERANK_API_URL set, the server there does it, not the database."""

    async def _go() -> dict[str, Any]:
        async with session() as s:
            r, count = await service.rerun_failed(s.conn, s.org_id, run_id)
        return {**r.summary_dict(), "requeued": count}

    data = local_or_server(_go, lambda c: remote_runs.rerun_failed(c, run_id), as_json=as_json)
    if as_json:
        print_json(data)
    else:
        console.print(f"run {short_id(data['id'])}: {data['requeued']} failed jobs requeued")


@app.command("expand")
def expand(
    run_id: str = RunArg,
    sample_percentage: float = typer.Option(..., "--sample-percentage", help="The new share."),
    as_json: bool = JsonOption,
) -> None:
    """Grow a sampled run to a larger percentage: only the missing scenarios are enqueued.

    With VALUERANK_API_URL set, the server there does it, not the database."""

    async def _go() -> dict[str, Any]:
        async with session() as s:
            r, added = await service.expand_run(s.conn, s.org_id, run_id, sample_percentage)
        return {**r.summary_dict(), "scenarios_added": added}

    data = local_or_server(
        _go,
        lambda c: remote_runs.expand_run(c, run_id, sample_percentage),
        as_json=as_json,
    )
    if as_json:
        print_json(data)
    else:
        console.print(f"run {short_id(data['id'])}: {data['scenarios_added']} scenarios added")


runs_judge_cmd.register(app)  # `runs judge`, in its own module
