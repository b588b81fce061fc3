"""`valuerank runs judge`: judge a finished run (again) without asking its models again; and
what `runs create` says about the judges a run got (the organisation's defaults, or none)."""

from __future__ import annotations

from typing import Any

import typer
from rich.markup import escape

from valuerank.cli.common import (
    JsonOption,
    api_client,
    console,
    local_or_server,
    print_json,
    session,
)
from valuerank.client import runs as remote_runs
from valuerank.config import get_settings
from valuerank.refs import short_id


def judge(
    run_id: str = typer.Argument(..., help="Run id or prefix."),
    judge_models: list[str] = typer.Option(
        ..., "--judge", help="Judge model `provider:model`; repeat for several."
    ),
    replace: bool = typer.Option(
        False,
        "--replace",
        help="The run's judges become exactly these; the readings of the others are removed.",
    ),
    allow_unknown_model: bool = typer.Option(
        False, "--allow-unknown-model", help="Use judges the registry does not know."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Judge a finished run's transcripts (again): the target models are not asked again.

    The judges given join the run's (a judge it has already reads only the transcripts it
    has not read); with --replace they become its only judges and the others' readings are
    removed. The run reopens, its judges read, and the consensus and the analysis are
    recomputed when they are done (`valuerank runs wait RUN --work`).

    With VALUERANK_API_URL set, the server there does it (its POST /api/runs/{id}/judge,
    with the server's keys and registry), not the database."""

    async def _go() -> dict[str, Any]:
        from valuerank.pipeline.rejudge import judge_run  # the database path's only

        async with session() as s:
            done = await judge_run(
                s.conn,
                s.org_id,
                run_id,
                judge_models,
                replace=replace,
                allow_unknown_models=allow_unknown_model,
            )
        return done.to_dict()

    data = local_or_server(
        _go,
        lambda c: remote_runs.judge_run(
            c, run_id, judge_models, replace=replace, allow_unknown=allow_unknown_model
        ),
        as_json=as_json,
    )
    if as_json:
        print_json(data)
        return
    short = short_id(data["id"])
    console.print(
        f"run {short} ({data['status']}): judges {escape(', '.join(data['judge_models']))}; "
        f"{data['enqueued']} judge jobs enqueued, no model asked again",
        highlight=False,
        soft_wrap=True,
    )
    if data["removed"]:
        console.print(
            f"removed {escape(', '.join(data['removed']))} and their "
            f"{data['judgments_removed']} judgments",
            highlight=False,
        )
    console.print(f"watch it: {wait_command(short)}; then valuerank analyze {short}")


def wait_command(short: str) -> str:
    """How to watch a run: with `--work` only where this process may run its jobs (no
    server: a server's own workers run them)."""
    work = "" if api_client(get_settings()) else " [--work]"
    return f"valuerank runs wait {short}{work}"


def defaults_lines(data: dict[str, Any]) -> list[str]:
    """What a new run took from the organisation's defaults, or how to judge a run without
    judges later."""
    used = data.get("defaults_used") or []
    lines = []
    if "judges" in used:
        lines.append(
            f"judges: {escape(', '.join(data['judge_models']))} (the organisation's default "
            "judges; see `valuerank orgs defaults`)"
        )
    elif not data.get("judge_models"):
        lines.append(
            "no judges: no value win rates; add them later with "
            f"`valuerank runs judge {short_id(data['id'])} --judge MODEL`"
        )
    if "summary_model" in used:
        lines.append(f"summary model: {escape(data['summary_model'])} (the organisation's default)")
    return lines


def register(app: typer.Typer) -> None:
    app.command("judge")(judge)
