"""`valuerank credentials …`: this organisation's provider API keys, encrypted at rest.

A key is never a command-line argument (it would land in the shell history and in `ps`):
`set` reads it from a hidden prompt, from another environment variable (`--from-env`) or from
standard input (`--stdin`). Nothing here prints a key: only its last four characters.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from valuerank.cli.common import (
    JsonOption,
    api_client,
    console,
    err_console,
    fail,
    local_or_server,
    print_json,
    session,
)
from valuerank.client import accounts as remote
from valuerank.client.api import segment
from valuerank.config import get_settings
from valuerank.credentials import delete_credential, list_credentials, set_credential
from valuerank.credentials.embedded_key import secret_key_for_url
from valuerank.crypto import SECRET_KEY_ENV, cipher_from_secret, generate_key
from valuerank.errors import ValueRankError

app = typer.Typer(
    help="Provider API keys of this organisation, stored encrypted (VALUERANK_SECRET_KEY).",
    no_args_is_help=True,
)


def _read_key(provider: str, from_env: str | None, stdin: bool, as_json: bool) -> str:
    if from_env is not None and stdin:
        fail("use either --from-env or --stdin, not both", code="INVALID_INPUT", as_json=as_json)
    if from_env is not None:
        value = os.environ.get(from_env)
        if not value:
            fail(
                f"environment variable {from_env} is not set or empty",
                code="INVALID_INPUT",
                as_json=as_json,
            )
        return value
    if stdin:
        return sys.stdin.readline()
    value = typer.prompt(f"API key for {provider}", hide_input=True, default="", show_default=False)
    return str(value)


@app.command("set")
def set_(
    provider: str = typer.Argument(..., help="Provider name, e.g. openai, anthropic, google."),
    from_env: str | None = typer.Option(
        None, "--from-env", metavar="VAR", help="Read the key from this environment variable."
    ),
    stdin: bool = typer.Option(
        False, "--stdin", help="Read the key from the first line of standard input."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Store (or replace) the organisation's API key for PROVIDER, encrypted.

    Without --from-env or --stdin the key is asked for at a hidden prompt. Needs
    VALUERANK_SECRET_KEY (make one with `valuerank credentials keygen`).

    With VALUERANK_API_URL set, the server there stores it (an admin), encrypted with the
    server's own VALUERANK_SECRET_KEY; the key travels in the request's body only.
    """
    cipher = None
    if api_client(get_settings()) is None:
        # Check the secret key before asking for the API key, not after it has been typed.
        try:
            # On the embedded SQLite default without a key, the key file beside the database.
            cipher = cipher_from_secret(
                secret_key_for_url(get_settings().database_url),
                purpose=f"storing an API key for {provider}",
                note="keys in provider environment variables work without it",
            )
        except ValueRankError as exc:
            fail(exc.message, code=exc.code, as_json=as_json, hint=exc.hint)
    api_key = _read_key(provider, from_env, stdin, as_json)

    async def _go() -> dict[str, Any]:
        async with session() as s:
            info = await set_credential(s.conn, s.org_id, provider, api_key, cipher=cipher)
        return info.to_dict()

    data: dict[str, Any] = local_or_server(
        _go,
        lambda server: remote.set_credential(server, provider, api_key),
        as_json=as_json,
    )
    if as_json:
        print_json(data)
        return
    console.print(
        f"stored the API key for [bold]{escape(data['provider'])}[/] "
        f"({escape(data['hint'])}), encrypted",
        highlight=False,
    )


@app.command("list")
def list_(as_json: bool = JsonOption) -> None:
    """The providers with a key: stored for this organisation, or in the environment.

    A stored key wins over the environment variable. Keys are shown as their last four
    characters only.

    With VALUERANK_API_URL set, the server there answers: its stored keys and its own
    environment's (shown without any character).
    """

    async def _go() -> list[dict[str, Any]]:
        async with session() as s:
            items = await list_credentials(s.conn, s.org_id, environ=os.environ)
        return [item.to_dict() for item in items]

    data = local_or_server(
        _go, lambda server: server.get("/api/credentials")["credentials"], as_json=as_json
    )
    if as_json:
        print_json(data)
        return
    if not data:
        console.print(
            "no API keys: store one with `valuerank credentials set PROVIDER` "
            "or export the provider's variable (e.g. OPENAI_API_KEY)",
            highlight=False,
        )
        return
    table = Table("provider", "key", "source", "variable", "stored")
    for item in data:
        stored = item["created_at"][:16].replace("T", " ") if item["created_at"] else "-"
        table.add_row(
            item["provider"], item["hint"], item["source"], item["env_var"] or "-", stored
        )
    console.print(table)


@app.command("delete")
def delete(
    provider: str = typer.Argument(..., help="Provider whose stored key to forget."),
    as_json: bool = JsonOption,
) -> None:
    """Forget the organisation's stored key for PROVIDER (its environment variable stays).

    With VALUERANK_API_URL set, the server there forgets it (an admin)."""

    async def _go() -> None:
        async with session() as s:
            await delete_credential(s.conn, s.org_id, provider)

    local_or_server(
        _go,
        lambda server: server.delete(f"/api/credentials/{segment(provider.strip())}"),
        as_json=as_json,
    )
    if as_json:
        print_json({"provider": provider.strip().lower(), "deleted": True})
        return
    console.print(f"deleted the stored API key for [bold]{escape(provider)}[/]", highlight=False)


@app.command("keygen")
def keygen() -> None:
    """Print a fresh random secret key for VALUERANK_SECRET_KEY (nothing is stored).

    e.g. `export VALUERANK_SECRET_KEY=$(valuerank credentials keygen)`. Keep it safe: stored
    keys cannot be read without it.
    """
    typer.echo(generate_key())
    err_console.print(
        f"[dim]set it as {SECRET_KEY_ENV} wherever valuerank runs and keep a copy: "
        "stored API keys cannot be read without it[/]",
        highlight=False,
    )
