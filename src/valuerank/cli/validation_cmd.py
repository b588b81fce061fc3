"""`valuerank validation …`: tasks with RA tags, validations by several models, and their
consensus (the services of valuerank.validation, as the API uses them). With
VALUERANK_API_URL set, every command asks the server's /api/assumptions routes instead
(valuerank.client.validation) and prints the same."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from valuerank.cli.common import (
    JsonOption,
    console,
    database,
    err_console,
    local_or_server,
    print_json,
    session,
)
from valuerank.client import ApiClient
from valuerank.client import validation as remote
from valuerank.refs import short_id
from valuerank.shapes import dump
from valuerank.validation.model import parse_task_id
from valuerank.validation.reads import multi_model_view, task_consensus
from valuerank.validation.rules import consensus_dict
from valuerank.validation.store import (
    NewValidation,
    add_tag,
    create_task,
    list_tags,
    list_tasks,
    record_validation,
)

app = typer.Typer(
    help="Multi-model validation: tasks, their RA tags, models' validations and consensus.",
    no_args_is_help=True,
)
tasks_app = typer.Typer(help="Tasks that carry RA tags.", no_args_is_help=True)
tags_app = typer.Typer(help="A task's Response-Awareness (RA) tags.", no_args_is_help=True)
app.add_typer(tasks_app, name="tasks")
app.add_typer(tags_app, name="tags")

TaskArg = typer.Argument(..., metavar="TASK", help="Task id (an integer).")
TagArg = typer.Argument(..., metavar="TAG", help="RA tag id, e.g. ra_tag_abc123.")
POLL_SECONDS = 0.25


def _level(consensus: dict[str, Any]) -> str:
    level = consensus["agreement_level"]
    colour = {"STRONG": "green", "MODERATE": "yellow", "WEAK": "red"}.get(level, "dim")
    flag = " [red]· models disagree[/]" if consensus["model_disagreement"] else ""
    return f"{consensus['consensus']:.3f} [{colour}]{level}[/]{flag}"


@tasks_app.command("create")
def tasks_create(
    name: str = typer.Argument(..., help="What the task is, e.g. 'Implement the login API'."),
    description: str = typer.Option("", "--description", help="More about the task."),
    as_json: bool = JsonOption,
) -> None:
    """Create a task; prints its id.

    With VALUERANK_API_URL set the server stores it."""

    async def _go() -> dict[str, Any]:
        async with session() as s:
            return dump(await create_task(s.conn, s.org_id, name, description))  # type: ignore[no-any-return]

    data = local_or_server(
        _go, lambda server: remote.create_task(server, name, description), as_json=as_json
    )
    if as_json:
        print_json(data)
    else:
        console.print(f"task [bold]{data['id']}[/] created: {escape(data['name'])}")


@tasks_app.command("list")
def tasks_list(
    limit: int = typer.Option(50, "--limit", min=1, max=500, help="How many, newest first."),
    as_json: bool = JsonOption,
) -> None:
    """The organisation's tasks, newest first.

    With VALUERANK_API_URL set the server lists them."""

    async def _go() -> list[dict[str, Any]]:
        async with session() as s:
            return dump(await list_tasks(s.conn, s.org_id, limit=limit))  # type: ignore[no-any-return]

    data = local_or_server(
        _go, lambda server: remote.list_tasks(server, limit=limit), as_json=as_json
    )
    if as_json:
        print_json(data)
        return
    if not data:
        console.print("no tasks yet: `valuerank validation tasks create NAME`")
        return
    table = Table("id", "name", "tags", "created", box=box.SIMPLE_HEAD)
    for t in data:
        table.add_row(str(t["id"]), escape(t["name"]), str(t["tag_count"]), t["created_at"][:19])
    console.print(table)


@tags_app.command("add")
def tags_add(
    task: str = TaskArg,
    text: str = typer.Argument(..., help="The tag, e.g. '#COMPLETION_DRIVE_IMPL: Using JWT…'."),
    tag_id: str | None = typer.Option(None, "--id", help="Its id (default: a fresh ra_…)."),
    as_json: bool = JsonOption,
) -> None:
    """Add an RA tag to a task (the same id and text again changes nothing).

    With VALUERANK_API_URL set the server stores it."""

    async def _go() -> dict[str, Any]:
        async with session() as s:
            tag, created = await add_tag(s.conn, s.org_id, parse_task_id(task), text, tag_id)
        return {**dump(tag), "created": created}

    data = local_or_server(
        _go, lambda server: remote.add_tag(server, task, text, tag_id), as_json=as_json
    )
    if as_json:
        print_json(data)
    else:
        verb = "added" if data["created"] else "already there"
        console.print(f"RA tag [bold]{escape(data['id'])}[/] {verb} (task {data['task_id']})")


@tags_app.command("list")
def tags_list(task: str = TaskArg, as_json: bool = JsonOption) -> None:
    """A task's RA tags in the order they were added.

    With VALUERANK_API_URL set the server lists them."""

    async def _go() -> list[dict[str, Any]]:
        async with session() as s:
            return dump(await list_tags(s.conn, s.org_id, parse_task_id(task)))  # type: ignore[no-any-return]

    data = local_or_server(_go, lambda server: remote.list_tags(server, task), as_json=as_json)
    if as_json:
        print_json(data)
        return
    table = Table("id", "text", box=box.SIMPLE_HEAD)
    for t in data:
        table.add_row(escape(t["id"]), escape(t["text"]))
    console.print(table if data else "no RA tags yet: `valuerank validation tags add TASK TEXT`")


@app.command("record")
def record(
    task: str = TaskArg,
    tag: str = TagArg,
    validator: str = typer.Option(..., "--validator", help="The model, provider:model."),
    outcome: str = typer.Option(..., "--outcome", help="validated, partial or rejected."),
    confidence: float = typer.Option(..., "--confidence", help="0..100."),
    notes: str = typer.Option("", "--notes"),
    as_json: bool = JsonOption,
) -> None:
    """Record a model's validation of a tag directly; prints the tag's new consensus.

    With VALUERANK_API_URL set the server records it."""

    async def _go() -> dict[str, Any]:
        new = NewValidation(validator, outcome, confidence, notes)
        async with session() as s:
            done = await record_validation(s.conn, s.org_id, parse_task_id(task), tag, new)
        return {
            "validation": dump(done.validation),
            "consensus": consensus_dict(done.consensus),
        }

    data = local_or_server(
        _go,
        lambda server: remote.record(
            server,
            task,
            tag,
            validator=validator,
            outcome=outcome,
            confidence=confidence,
            notes=notes,
        ),
        as_json=as_json,
    )
    if as_json:
        print_json(data)
    else:
        v = data["validation"]
        console.print(
            f"validation {v['id']} recorded: {escape(v['validator_id'])} {v['outcome']} "
            f"({v['confidence']}); consensus {_level(data['consensus'])}"
        )


async def _wait(db: Any, org_id: str, job_ids: list[str], timeout: float) -> dict[str, Any]:
    from valuerank.queue import JobStatus, get_job

    deadline = time.monotonic() + timeout
    while True:
        async with db.transaction() as conn:
            found = [await get_job(conn, j, org_id=org_id) for j in job_ids]
        if all(
            j.status in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED) for j in found
        ):
            break
        if time.monotonic() >= deadline:
            break
        await asyncio.sleep(POLL_SECONDS)
    return {
        j.id: {"model": j.model, "status": j.status.value, "error": j.last_error} for j in found
    }


WORK_ON_SERVER = (
    "note: the server's workers run the jobs (VALUERANK_API_URL): --work waits for them, as "
    "--wait does"
)


@app.command("validate")
def validate(
    task: str = TaskArg,
    tag: str = TagArg,
    model: list[str] = typer.Option(
        ..., "--model", "-m", help="A validator `provider:model`; repeat for several."
    ),
    request_id: str | None = typer.Option(
        None, "--request-id", help="A new round: each model is asked once per tag and round."
    ),
    wait: bool = typer.Option(False, "--wait", help="Wait for the answers, then show the tag."),
    work: bool = typer.Option(
        False,
        "--work",
        help="Run the jobs in this process (embedded); implies --wait. Against a server its "
        "workers run them.",
    ),
    timeout: float = typer.Option(300.0, "--timeout", help="Seconds --wait waits at most."),
    as_json: bool = JsonOption,
) -> None:
    """Ask models to validate a tag: one queued job per model (a worker runs them; --work
    runs them here). Unknown models are refused before anything is queued.

    With VALUERANK_API_URL set the server queues them (and its workers run them)."""

    async def _go() -> dict[str, Any]:
        from valuerank.cli.live import in_process_worker
        from valuerank.validation.requests import request_validation

        task_id = parse_task_id(task)
        async with database() as opened:
            async with opened.db.transaction(immediate=True) as conn:
                asked = await request_validation(
                    conn, opened.org_id, task_id, tag, model, request_id=request_id
                )
            data: dict[str, Any] = dump(asked)
            if not (wait or work):
                return data
            ids = [j.job_id for j in asked.jobs]
            worker = in_process_worker(opened.db) if work else contextlib.nullcontext()
            async with worker:
                data["results"] = await _wait(opened.db, opened.org_id, ids, timeout)
            read = await multi_model_view(opened.db, opened.org_id, task_id, tag)
            data["view"] = read.data()
            return data

    def _remote(server: ApiClient) -> dict[str, Any]:
        if work:
            err_console.print(WORK_ON_SERVER, style="dim", markup=False)
        return remote.validate(
            server, task, tag, model, request_id=request_id, wait=wait or work, timeout=timeout
        )

    data = local_or_server(_go, _remote, as_json=as_json)
    if as_json:
        print_json(data)
        return
    for job in data["jobs"]:
        state = "queued" if job["enqueued"] else "already asked"
        console.print(f"{escape(job['model'])}: {state} (job {short_id(job['job_id'])})")
    if "results" not in data:
        console.print("[dim]a worker runs them: `valuerank worker`, or add --work[/]")
        return
    for result in data["results"].values():
        if result["status"] != "succeeded":
            console.print(
                f"[red]{escape(result['model'] or '')}: {result['status']}[/] "
                f"{escape(result['error'] or '')}"
            )
    _print_view(data["view"])


def _print_view(view: dict[str, Any]) -> None:
    console.print(f"[bold]{escape(view['ra_tag_text'])}[/] (task {view['task_id']})")
    table = Table("validator", "outcome", "conf.", "weight", "notes", box=box.SIMPLE_HEAD)
    for v in view["validations"]:
        table.add_row(
            escape(v["validator_id"]),
            v["outcome"],
            str(v["confidence"]),
            f"{v['model_weight']:g}",
            escape(v["notes"]),
        )
    if view["validations"]:
        console.print(table)
    console.print(f"consensus {_level(view['consensus'])} · {view['model_count']} model(s)")


@app.command("view")
def view(task: str = TaskArg, tag: str = TagArg, as_json: bool = JsonOption) -> None:
    """Every model's current validation of a tag, with their consensus.

    With VALUERANK_API_URL set the server answers."""

    async def _go() -> dict[str, Any]:
        async with database() as opened:
            read = await multi_model_view(opened.db, opened.org_id, parse_task_id(task), tag)
        return read.data()

    data = local_or_server(_go, lambda server: remote.view(server, task, tag), as_json=as_json)
    if as_json:
        print_json(data)
    else:
        _print_view(data)


@app.command("consensus")
def consensus(task: str = TaskArg, as_json: bool = JsonOption) -> None:
    """The consensus of every RA tag of a task, overall, and its contentious and
    high-confidence tags.

    With VALUERANK_API_URL set the server answers."""

    async def _go() -> dict[str, Any]:
        async with database() as opened:
            read = await task_consensus(opened.db, opened.org_id, parse_task_id(task))
        return read.data()

    data = local_or_server(_go, lambda server: remote.consensus(server, task), as_json=as_json)
    if as_json:
        print_json(data)
        return
    overall = data["overall_consensus"]
    table = Table("tag", "consensus", "n", "top models", box=box.SIMPLE_HEAD)
    for t in data["ra_tag_summaries"]:
        mark = " ⚑" if t["ra_tag_id"] in data["contentious_tags"] else ""
        mark += " ★" if t["ra_tag_id"] in data["high_confidence_tags"] else ""
        table.add_row(
            escape(t["ra_tag_id"]) + mark,
            _level(t["consensus"]),
            str(t["consensus"]["total_validations"]),
            escape(", ".join(t["top_models"])),
        )
    console.print(f"[bold]{escape(data['task_name'])}[/] (task {data['task_id']})")
    if data["ra_tag_summaries"]:
        console.print(table)
        console.print("[dim]⚑ contentious · ★ high confidence[/]")
    console.print(
        f"overall {overall['consensus']:.3f} {overall['agreement_level']} · "
        f"{overall['total_validations']} validation(s) of {overall['total_tags']} tag(s)"
    )
