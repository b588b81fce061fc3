"""`valuerank runs …`: create a run, watch it, steer it (pause, resume, cancel, rerun, expand)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import typer
from pydantic import TypeAdapter
from rich.markup import escape
from rich.table import Table

from valuerank.cli import runs_judge_cmd
from valuerank.cli.common import (
    JsonOption,
    api_client,
    ask,
    console,
    database,
    print_json,
    run,
    session,
)
from valuerank.cli.live import in_process_worker, report_json, results_table, wait_for_run
from valuerank.client import runs as remote_runs
from valuerank.client.runs import print_status_from, run_status
from valuerank.config import get_settings
from valuerank.queue.enqueue import priority_value
from valuerank.refs import short_id
from valuerank.runs import service
from valuerank.runs.config import build_config
from valuerank.runs.progress import run_report
from valuerank.runs.results import ModelResult, model_results
from valuerank.shapes import dump
from valuerank.terminal import print_run_status

app = typer.Typer(help="Runs: send a definition's scenarios to models.", no_args_is_help=True)
RunArg = typer.Argument(..., help="Run id or prefix.")


@app.command("create")
def create(
    definition: str = typer.Option(..., "--definition", "-d", help="Definition version id."),
    model: list[str] = typer.Option(
        ..., "--model", "-m", help="Target model `provider:model`; repeat for several."
    ),
    sample_percentage: float = typer.Option(
        100.0, "--sample-percentage", help="Share of the scenarios to run (nested sample)."
    ),
    sample_seed: int | None = typer.Option(
        None,
        "--sample-seed",
        min=0,
        help="Seed of the sample (default: a random one, stored on the run and shown).",
    ),
    samples_per_scenario: int = typer.Option(
        1, "--samples-per-scenario", help="Conversations per scenario and model."
    ),
    phrasings: str = typer.Option(
        "first",
        "--phrasings",
        help="Wordings of each sampled level combination: first (each level's first option), "
        "all (every option: one scenario per phrasing) or random (one option per level, "
        "seeded by the sample seed). As `scenarios expand --mode`.",
    ),
    scale_order: str = typer.Option(
        "as-written",
        "--scale-order",
        help="Order of the scale's numbered lines: as-written, reversed (each number shows "
        "the mirrored line's text; decisions are mapped back) or both (every scenario asked "
        "twice, as `<id>` and `<id>-reversed`).",
    ),
    judge: list[str] = typer.Option([], "--judge", help="Judge model; repeat for a consensus."),
    summary_model: str | None = typer.Option(
        None, "--summary-model", help="Model writing per-transcript rationales and the summary."
    ),
    temperature: float = typer.Option(0.0, "--temperature"),
    max_tokens: int = typer.Option(1000, "--max-tokens", help="Answer limit per turn."),
    followup_turns: int = typer.Option(
        1, "--followup-turns", help="Follow-up turns after the scenario (the CLI's default: 1)."
    ),
    system_prompt: str | None = typer.Option(None, "--system-prompt"),
    reuse_cache: bool = typer.Option(
        False, "--reuse-cache", help="Answer identical requests from the response cache."
    ),
    name: str = typer.Option("", "--name", help="A name for the run."),
    priority: str = typer.Option("normal", "--priority", help="low, normal, high or a number."),
    no_start: bool = typer.Option(False, "--no-start", help="Create only; start it later."),
    no_default_judges: bool = typer.Option(
        False,
        "--no-default-judges",
        help="Without --judge, no judges (not the organisation's defaults); likewise for "
        "the summary model.",
    ),
    allow_unknown_model: bool = typer.Option(
        False,
        "--allow-unknown-model",
        help="Use models the registry does not know (e.g. a new model, or one served by a "
        "local Ollama); they must still name a known provider.",
    ),
    as_json: bool = JsonOption,
) -> None:
    """Create a run (and start it): one probe job per (scenario, model, sample).

    Every model (targets, judges, summary model) is checked first: a known provider, a valid
    scripted persona or local model file, a key for the provider, and a model the registry
    knows (`valuerank models list`) unless --allow-unknown-model. Any problem exits 1 naming
    the model and the valid choices, and nothing is written."""

    # Here, not with the module: the credentials, the registry and the cost estimate are for
    # creating a run only, and every other `runs` command would load them.
    from valuerank.pipeline.launch import launch_run

    async def _go() -> dict[str, Any]:
        config = build_config(
            models=tuple(model),
            sample_percentage=sample_percentage,
            sample_seed=sample_seed,
            samples_per_scenario=samples_per_scenario,
            phrasings=phrasings,
            scale_order=scale_order,
            judge_models=tuple(judge),
            summary_model=summary_model,
            temperature=temperature,
            max_tokens=max_tokens,
            followup_turns=followup_turns,
            system_prompt=system_prompt,
            reuse_cache=reuse_cache,
        )
        level = int(priority) if priority.lstrip("-").isdigit() else priority
        async with session() as s:
            launched = await launch_run(
                s.conn,
                s.org_id,
                definition,
                config,
                name=name,
                priority=priority_value(level),
                start=not no_start,
                allow_unknown_models=allow_unknown_model,
                use_org_defaults=not no_default_judges,
            )
        return launched.to_dict()

    data = run(_go(), as_json=as_json)
    if as_json:
        print_json(data)
        return
    cost = data["estimate"]["cost_usd"]
    unknown = data["estimate"]["unknown_price_models"]
    console.print(
        f"run [bold]{data['id']}[/] ({data['status']}): {data['scenarios']} of "
        f"{data['total_scenarios']} scenarios × {len(data['models'])} models → {data['jobs']} jobs"
        f" (sample {data['sample_percentage']:g}%, seed {data['sample_seed']})"
    )
    if (data["phrasings"], data["scale_order"]) != ("first", "as-written"):
        console.print(f"asked in phrasings {data['phrasings']}, scale order {data['scale_order']}")
    estimate = "unknown" if cost is None else f"≤ ${cost:.4f}"
    roles = sorted({m["role"] for m in data["estimate"]["models"]} - {"probe"})
    console.print(
        f"estimated cost: {estimate}"
        + (f", {' and '.join(roles)} calls included" if roles else "")
        + (f" (no price for {', '.join(unknown)})" if unknown else "")
    )
    for line in runs_judge_cmd.defaults_lines(data):
        console.print(line, highlight=False, soft_wrap=True)
    rubric = data.get("rubric")
    if rubric is not None:
        console.print(f"judges read the values rubric {_rubric_line(rubric)}")
    if data["status"] == "pending":
        console.print(f"not started: valuerank runs start {short_id(data['id'])}")
    else:
        console.print(f"watch it: valuerank runs wait {short_id(data['id'])} [--work]")


def _rubric_line(rubric: dict[str, Any]) -> str:
    from valuerank.default_rubric import describe_rubric

    own = " (import your own with `valuerank rubrics import FILE.yaml`)"
    hint = own if rubric["default"] else ""
    return escape(describe_rubric(rubric) + hint)


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
    """Show a live progress bar until the run ends (exit 0), or the timeout passes (exit 2)."""

    async def _go() -> tuple[dict[str, Any], bool]:
        async with database() as opened:
            db, org_id = opened.db, opened.org_id
            async with db.transaction() as conn:
                found = await service.get_run(conn, org_id, run_id)
            show = not as_json
            if work:
                async with in_process_worker(db):
                    final, ended = await wait_for_run(
                        db, org_id, found.id, timeout=timeout, show=show
                    )
            else:
                final, ended = await wait_for_run(db, org_id, found.id, timeout=timeout, show=show)
        return report_json(final), ended

    data, ended = run(_go(), as_json=as_json)
    if as_json:
        print_json(data)
    elif ended:
        console.print(f"run {short_id(data['id'])} {data['status']}")
    if not ended:
        if not as_json:
            console.print(f"[yellow]still {data['status']} after {timeout:g} s[/]")
        raise typer.Exit(2)


def _steer(
    action: Callable[[Any, str, str], Awaitable[service.Run]], run_id: str, as_json: bool
) -> None:
    async def _go() -> dict[str, Any]:
        async with session() as s:
            return (await action(s.conn, s.org_id, run_id)).summary_dict()

    data = run(_go(), as_json=as_json)
    if as_json:
        print_json(data)
    else:
        console.print(f"run {short_id(data['id'])}: {data['status']}")


@app.command("start")
def start(run_id: str = RunArg, as_json: bool = JsonOption) -> None:
    """Start a run created with --no-start (starting twice enqueues nothing new)."""

    async def _go() -> dict[str, Any]:
        async with session() as s:
            started = await service.start_run(s.conn, s.org_id, run_id)
        return {**started.run.summary_dict(), "enqueued": started.enqueued}

    data = run(_go(), as_json=as_json)
    if as_json:
        print_json(data)
    else:
        console.print(f"run {short_id(data['id'])}: {data['enqueued']} jobs enqueued")


@app.command("pause")
def pause(run_id: str = RunArg, as_json: bool = JsonOption) -> None:
    """Stop starting the run's jobs; running ones finish. Nothing is lost."""
    _steer(service.pause_run, run_id, as_json)


@app.command("resume")
def resume(run_id: str = RunArg, as_json: bool = JsonOption) -> None:
    """Start the run's jobs again."""
    _steer(service.resume_run, run_id, as_json)


@app.command("cancel")
def cancel(run_id: str = RunArg, as_json: bool = JsonOption) -> None:
    """Cancel queued jobs now; running ones stop at their next heartbeat."""
    _steer(service.cancel_run, run_id, as_json)


@app.command("delete")
def delete(
    run_id: str = RunArg,
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask."),
    as_json: bool = JsonOption,
) -> None:
    """Delete a run with all its jobs, events, transcripts and judgments."""
    if not yes and not as_json and not typer.confirm(f"Delete run {run_id} and all its data?"):
        raise typer.Exit(1)

    async def _go() -> dict[str, Any]:
        async with session() as s:
            return {"id": await service.delete_run(s.conn, s.org_id, run_id), "deleted": True}

    data = run(_go(), as_json=as_json)
    if as_json:
        print_json(data)
    else:
        console.print(f"run {short_id(data['id'])} deleted")


@app.command("rerun-failed")
def rerun_failed(run_id: str = RunArg, as_json: bool = JsonOption) -> None:
    """Send the run's failed jobs back to the queue with fresh attempts."""

    async def _go() -> dict[str, Any]:
        async with session() as s:
            r, count = await service.rerun_failed(s.conn, s.org_id, run_id)
        return {**r.summary_dict(), "requeued": count}

    data = run(_go(), as_json=as_json)
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
    """Grow a sampled run to a larger percentage: only the missing scenarios are enqueued."""

    async def _go() -> dict[str, Any]:
        async with session() as s:
            r, added = await service.expand_run(s.conn, s.org_id, run_id, sample_percentage)
        return {**r.summary_dict(), "scenarios_added": added}

    data = run(_go(), as_json=as_json)
    if as_json:
        print_json(data)
    else:
        console.print(f"run {short_id(data['id'])}: {data['scenarios_added']} scenarios added")


runs_judge_cmd.register(app)  # `runs judge`, in its own module
