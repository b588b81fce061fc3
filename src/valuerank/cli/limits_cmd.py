"""`valuerank queue limits …`: each provider's (or model's) rate limits, shared by all workers."""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from valuerank.cli.common import JsonOption, console, local_or_server, print_json, session
from valuerank.client import admin as remote
from valuerank.queue import providers as provider_limits
from valuerank.queue.ratelimit import list_buckets

app = typer.Typer(
    help="Provider rate limits: RPM/TPM buckets, spacing and adaptive concurrency.",
    no_args_is_help=True,
)


@app.command("set")
def set_limits(
    provider: str = typer.Argument(..., help="Provider prefix, e.g. openai."),
    model: str = typer.Option("", "--model", help="Only this model (default: the provider)."),
    rpm: float | None = typer.Option(
        None, "--rpm", help="Requests per minute (0 or unset: no limit)."
    ),
    tpm: float | None = typer.Option(
        None, "--tpm", help="Tokens per minute (0 or unset: no limit)."
    ),
    min_interval_ms: int = typer.Option(
        0, "--min-interval-ms", help="Spacing of requests in ms (0: none)."
    ),
    concurrency: int | None = typer.Option(
        None,
        "--concurrency",
        help="Calls in flight, cut on a 429 and grown back when clean (0 or unset: no limit).",
    ),
    as_json: bool = JsonOption,
) -> None:
    """Create or change a provider's (or one model's) limits. Every limit left out or set to
    0 is no limit: `set openai --rpm 0` lifts the RPM limit.

    With VALUERANK_API_URL set, the server there sets them (an admin of its default
    organisation)."""

    async def _go() -> dict[str, Any]:
        async with session() as s:
            return await provider_limits.set_limits(
                s.conn,
                provider,
                model,
                rpm=rpm,
                tpm=tpm,
                min_interval_ms=min_interval_ms,
                concurrency=concurrency,
            )

    body = {
        "model": model,
        "rpm": rpm,
        "tpm": tpm,
        "min_interval_ms": min_interval_ms,
        "concurrency": concurrency,
    }
    data = local_or_server(
        _go, lambda server: remote.set_limits(server, provider, body), as_json=as_json
    )
    if as_json:
        print_json(data)
    else:
        console.print(f"limits of {data['key']} set")


@app.command("list")
def list_limits(as_json: bool = JsonOption) -> None:
    """Every bucket by key: its limits, whether a 429 blocks it, how many 429s it saw.

    With VALUERANK_API_URL set, the server there answers, not the database."""

    async def _go() -> list[dict[str, Any]]:
        async with session() as s:
            rows = [provider_limits.limits_row(b) for b in await list_buckets(s.conn)]
        return sorted(rows, key=lambda row: row["key"])

    rows = local_or_server(_go, remote.list_limits, as_json=as_json)
    if as_json:
        print_json(rows)
        return
    table = Table(title="Rate limits")
    for column in ("provider", "model", "rpm", "tpm", "spacing ms", "concurrency", "429s"):
        table.add_column(column)
    for r in rows:
        table.add_row(
            r["provider"],
            r["model"] or "*",
            *(str(r[k]) if r[k] is not None else "–" for k in ("rpm", "tpm")),
            str(r["min_interval_ms"]),
            str(r["concurrency"]) if r["concurrency"] is not None else "–",
            str(r["rate_limited_total"]) + (" (blocked)" if r["blocked_until"] else ""),
        )
    console.print(table)


@app.command("remove")
def remove_limits(
    provider: str = typer.Argument(...),
    model: str = typer.Option("", "--model"),
    as_json: bool = JsonOption,
) -> None:
    """Remove a bucket: its jobs run without rate limits.

    With VALUERANK_API_URL set, the server there removes it (an admin of its default
    organisation)."""

    async def _go() -> dict[str, Any]:
        async with session() as s:
            key = await provider_limits.remove_limits(s.conn, provider, model)
        return {"key": key, "removed": True}

    data = local_or_server(
        _go, lambda server: remote.remove_limits(server, provider, model), as_json=as_json
    )
    if as_json:
        print_json(data)
    else:
        console.print(f"limits of {data['key']} removed")
