"""`valuerank mcp`: the MCP server over stdio, for an AI assistant on this machine.

The server itself is `valuerank.mcp` (imported when the command runs); here: which API it
acts on (a server named by VALUERANK_API_URL, or this install's database), and, on SQLite,
a worker in the same process, so the runs an assistant starts also finish (as `valuerank
serve` does). Nothing but the protocol may reach stdout: messages go to stderr.
"""

from __future__ import annotations

import typer

from valuerank.cli.common import api_client, configured_database, fail, run
from valuerank.cli.live import in_process_worker
from valuerank.config import get_settings
from valuerank.db.migrate import ensure_schema
from valuerank.orgs import ensure_org


def mcp_command(
    work: bool | None = typer.Option(
        None,
        "--work/--no-work",
        help="Also run jobs in this process (default: on with SQLite, off with PostgreSQL; "
        "never with VALUERANK_API_URL, where the server's workers run them).",
    ),
) -> None:
    """Serve the MCP tools and resources over stdio, for an AI assistant (Claude Code…).

    With VALUERANK_API_URL and VALUERANK_API_TOKEN set it acts on that server as the
    token's user; otherwise on this install's database as its local admin.
    """
    from valuerank.mcp.stdio import local_gateway, remote_gateway, serve_stdio

    settings = get_settings()
    server = api_client(settings)
    if server is not None:
        if not server.token:
            fail(
                "VALUERANK_API_URL is set but VALUERANK_API_TOKEN is not",
                code="MISSING_API_TOKEN",
                as_json=False,
                hint="create one on the server with `valuerank tokens create`",
            )
        token = server.token
        assert token is not None

        async def _remote() -> None:
            async with remote_gateway(server.url(""), token) as gateway:
                await serve_stdio(gateway)

        run(_remote())
        return

    async def _local() -> None:
        db = configured_database(settings)
        try:
            await ensure_schema(db)
            async with db.transaction() as conn:
                org_id = await ensure_org(conn, settings.default_org)
            in_process = db.url.is_sqlite if work is None else work
            async with local_gateway(db, org_id, settings) as gateway:
                if in_process:
                    async with in_process_worker(db):
                        await serve_stdio(gateway)
                else:
                    await serve_stdio(gateway)
        finally:
            await db.dispose()

    run(_local())


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp_command)
