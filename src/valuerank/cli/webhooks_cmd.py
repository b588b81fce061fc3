"""`valuerank webhooks …`: this organisation's webhooks and their deliveries (the outbox).

A signing secret is never a command-line argument (it would land in the shell history and in
`ps`): `add` reads it from standard input (`--secret-stdin`) or a hidden prompt
(`--secret-prompt`), and stores only its encryption with VALUERANK_SECRET_KEY. Nothing here
prints a secret: webhooks show `has_secret` only.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Any

import typer
from rich.markup import escape

from valuerank.cli.common import (
    JsonOption,
    api_client,
    console,
    fail,
    local_or_server,
    print_json,
    session,
)
from valuerank.client import webhooks as remote
from valuerank.config import get_settings
from valuerank.crypto import cipher_from_secret
from valuerank.errors import ValueRankError
from valuerank.queue.outbox import (
    dead_letter_summary,
    get_webhook,
    list_outbox,
    list_webhooks,
    register_webhook,
    remove_webhook,
    retry_delivery,
)
from valuerank.queue.webhook_signing import SIGNATURE_HEADER
from valuerank.runs.events import webhook_topics

app = typer.Typer(
    help="Webhooks of this organisation: add, list, remove; deliveries, dead letters, retry.",
    no_args_is_help=True,
)

# A run's partition ends with `run_complete` (valuerank.runs.events), other partitions with
# `partition_complete`; schedule alerts are `maintenance.anomaly`.
_EVENT_TYPES = ", ".join(webhook_topics())
_ERROR_CHARS = 300  # of a last_error shown to people (--json has it whole)


class DeliveryStatus(StrEnum):
    pending = "pending"
    delivered = "delivered"
    dead = "dead"


def _read_secret(stdin: bool, prompt: bool, as_json: bool) -> str | None:
    if stdin and prompt:
        fail(
            "use either --secret-stdin or --secret-prompt, not both",
            code="INVALID_INPUT",
            as_json=as_json,
            hint="--secret-stdin reads the first line of standard input, --secret-prompt asks "
            "at a hidden prompt",
        )
    if stdin:
        return sys.stdin.readline().rstrip("\r\n")
    if prompt:
        value = typer.prompt("Signing secret", hide_input=True, default="", show_default=False)
        return str(value).rstrip("\r\n")
    return None


def _when(value: str | None) -> str:
    return "-" if value is None else value[:19].replace("T", " ")


def _short(error: str) -> str:
    return error if len(error) <= _ERROR_CHARS else error[: _ERROR_CHARS - 1] + "…"


def _say(text: str) -> None:
    console.print(text, highlight=False, soft_wrap=True)


def _print_webhook(data: dict[str, Any], verb: str) -> None:
    events = ", ".join(data["event_types"]) or "all events"
    signed = "signed" if data["has_secret"] else "unsigned"
    console.print(
        f"{verb} webhook [bold]{escape(data['id'])}[/] → {escape(data['url'])} "
        f"({escape(events)}; {signed})",
        highlight=False,
        soft_wrap=True,
    )


@app.command("add")
def add(
    url: str = typer.Argument(..., help="The http(s) URL notifications are POSTed to."),
    events: list[str] | None = typer.Option(
        None,
        "--event",
        metavar="TYPE",
        help=f"Only this event type (repeatable; default: all). Types: {_EVENT_TYPES}.",
    ),
    secret_stdin: bool = typer.Option(
        False, "--secret-stdin", help="Read the signing secret from the first line of stdin."
    ),
    secret_prompt: bool = typer.Option(
        False, "--secret-prompt", help="Ask for the signing secret at a hidden prompt."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Subscribe URL to this organisation's notifications.

    With a signing secret every delivery is signed as Standard Webhooks do (webhook-id,
    webhook-timestamp, webhook-signature: v1,<base64 HMAC-SHA256 of id.timestamp.body>);
    verify with the standardwebhooks package. A secret "whsec_<base64>" keys the HMAC with
    its decoded bytes, any other with its UTF-8 bytes. The secret is stored encrypted and
    needs VALUERANK_SECRET_KEY (make one with `valuerank credentials keygen`); it is never
    printed.

    With VALUERANK_API_URL set, the server there adds it (an admin of the organisation), and
    the secret is stored with the server's own VALUERANK_SECRET_KEY.
    """
    cipher = None
    if (secret_stdin or secret_prompt) and api_client(get_settings()) is None:
        # Check the secret key before asking for the secret, not after it has been typed.
        try:
            cipher = cipher_from_secret(
                get_settings().secret_key,
                purpose="storing a webhook signing secret",
                note="webhooks without a secret work without it",
            )
        except ValueRankError as exc:
            fail(exc.message, code=exc.code, as_json=as_json, hint=exc.hint)
    secret = _read_secret(secret_stdin, secret_prompt, as_json)

    async def _go() -> dict[str, Any]:
        async with session() as s:
            hook = await register_webhook(
                s.conn, s.org_id, url, event_types=events or (), secret=secret, cipher=cipher
            )
        return hook.to_dict()

    data = local_or_server(
        _go, lambda server: remote.add_webhook(server, url, events or (), secret), as_json=as_json
    )
    if as_json:
        print_json(data)
        return
    _print_webhook(data, "added")
    if data["has_secret"]:
        console.print(
            f"[dim]deliveries carry {SIGNATURE_HEADER}: v1,<base64 HMAC-SHA256 of "
            "id.timestamp.body> (Standard Webhooks)[/]",
            highlight=False,
        )


@app.command("list")
def list_(as_json: bool = JsonOption) -> None:
    """This organisation's webhooks (secrets are never shown: `signed` says if one is set).

    With VALUERANK_API_URL set, the server there answers (an admin), not the database."""

    async def _go() -> list[dict[str, Any]]:
        async with session() as s:
            return [h.to_dict() for h in await list_webhooks(s.conn, s.org_id)]

    data = local_or_server(_go, remote.list_webhooks, as_json=as_json)
    if as_json:
        print_json(data)
        return
    if not data:
        console.print("no webhooks: add one with `valuerank webhooks add URL`", highlight=False)
        return
    # One block per webhook rather than a table: two full ids never fit 80 columns.
    for hook in data:
        state = "[green]active[/]" if hook["active"] else "[red]inactive[/]"
        signed = "signed" if hook["has_secret"] else "unsigned"
        events = ", ".join(hook["event_types"]) or "all events"
        _say(f"[bold]{hook['id']}[/]  {state}  {signed}  {escape(events)}")
        _say(f"  {escape(hook['url'])}  [dim](added {_when(hook['created_at'])})[/]")


@app.command("remove")
def remove(
    webhook_id: str = typer.Argument(..., metavar="ID", help="The webhook to remove."),
    as_json: bool = JsonOption,
) -> None:
    """Remove a webhook and its deliveries (pending, delivered and dead).

    With VALUERANK_API_URL set, the server there removes it (an admin)."""

    async def _go() -> None:
        async with session() as s:
            await remove_webhook(s.conn, s.org_id, webhook_id)

    local_or_server(_go, lambda server: remote.remove_webhook(server, webhook_id), as_json=as_json)
    if as_json:
        print_json({"id": webhook_id, "removed": True})
        return
    console.print(f"removed webhook [bold]{escape(webhook_id)}[/]", highlight=False)


@app.command("deliveries")
def deliveries(
    statuses: list[DeliveryStatus] | None = typer.Option(
        None, "--status", help="Only deliveries in this state (repeatable; default: all)."
    ),
    webhook_id: str | None = typer.Option(
        None, "--webhook", metavar="ID", help="Only this webhook's deliveries."
    ),
    topic: str | None = typer.Option(None, "--topic", help="Only this event type."),
    limit: int = typer.Option(50, "--limit", min=1, help="At most this many, newest first."),
    as_json: bool = JsonOption,
) -> None:
    """The organisation's webhook deliveries (the outbox), newest first.

    With VALUERANK_API_URL set, the server there answers (an admin), not the database."""

    async def _go() -> list[dict[str, Any]]:
        async with session() as s:
            if webhook_id is not None:
                await get_webhook(s.conn, s.org_id, webhook_id)  # NOT_FOUND, not an empty list
            entries = await list_outbox(
                s.conn,
                s.org_id,
                status=[str(x.value) for x in statuses or ()],
                topic=topic,
                webhook_id=webhook_id,
                limit=limit,
            )
        return [e.to_dict() for e in entries]

    data = local_or_server(
        _go,
        lambda server: remote.deliveries(
            server,
            statuses=[str(x.value) for x in statuses or ()],
            webhook_id=webhook_id,
            topic=topic,
            limit=limit,
        ),
        as_json=as_json,
    )
    if as_json:
        print_json(data)
        return
    if not data:
        console.print("no deliveries", highlight=False)
        return
    colours = {"delivered": "green", "dead": "red"}
    for entry in data:
        status = entry["status"]
        shown = f"[{colours[status]}]{status}[/]" if status in colours else status
        tries = f"attempt {entry['attempts']}/{entry['max_attempts']}"
        _say(f"[bold]{entry['id']}[/]  {shown}  {tries}  {escape(entry['topic'])}")
        if status == "pending":
            when = f"next attempt {_when(entry['next_attempt_at'])}"
        elif status == "delivered":
            when = f"delivered {_when(entry['delivered_at'])}"
        else:
            when = f"created {_when(entry['created_at'])}"
        _say(f"  webhook {entry['webhook_id'] or '-'}  [dim]{when}[/]")
        if entry["last_error"] and status != "delivered":
            code = entry["last_status_code"]
            error = _short(entry["last_error"])
            if code is not None and f"HTTP {code}" not in error:
                error += f" (HTTP {code})"
            _say(f"  [red]last error[/]: {escape(error)}")


@app.command("dead-letters")
def dead_letters(as_json: bool = JsonOption) -> None:
    """Dead deliveries per event type and webhook: how many, since when, the latest error.

    With VALUERANK_API_URL set, the server there answers (an admin), not the database."""

    async def _go() -> list[dict[str, Any]]:
        async with session() as s:
            return [g.to_dict() for g in await dead_letter_summary(s.conn, s.org_id)]

    data = local_or_server(_go, remote.dead_letters, as_json=as_json)
    if as_json:
        print_json(data)
        return
    if not data:
        console.print("no dead letters", highlight=False)
        return
    for group in data:
        _say(
            f"[bold]{escape(group['topic'])}[/]  webhook {group['webhook_id'] or '-'}  "
            f"[red]{group['count']} dead[/] since {_when(group['oldest'])}"
        )
        if group["last_error"]:
            _say(f"  [red]last error[/]: {escape(_short(group['last_error']))}")
    _say(
        "[dim]retry one with `valuerank webhooks retry DELIVERY_ID` "
        "(ids: `valuerank webhooks deliveries --status dead`)[/]"
    )


@app.command("retry")
def retry(
    delivery_id: str = typer.Argument(..., metavar="DELIVERY_ID", help="A dead delivery."),
    as_json: bool = JsonOption,
) -> None:
    """Send a dead delivery again: back to pending, due now, attempts reset.

    With VALUERANK_API_URL set, the server there sends it again (an admin)."""

    async def _go() -> dict[str, Any]:
        async with session() as s:
            return (await retry_delivery(s.conn, s.org_id, delivery_id)).to_dict()

    data = local_or_server(
        _go, lambda server: remote.retry_delivery(server, delivery_id), as_json=as_json
    )
    if as_json:
        print_json(data)
        return
    console.print(
        f"delivery [bold]{escape(data['id'])}[/] is pending again: a worker sends it shortly",
        highlight=False,
    )
