"""`valuerank db …`: schema migrations."""

from __future__ import annotations

import typer

from valuerank.cli.common import JsonOption, configured_database, console, print_json, run
from valuerank.config import get_settings
from valuerank.db.migrate import current_revision, head_revision, upgrade

app = typer.Typer(help="Database schema: upgrade and inspect.", no_args_is_help=True)


@app.command("upgrade")
def upgrade_(as_json: bool = JsonOption) -> None:
    """Apply every pending migration (SQLite or PostgreSQL)."""

    async def _go() -> None:
        settings = get_settings()
        db = configured_database(settings, local_only=True)
        try:
            before, after = await upgrade(db)
        finally:
            await db.dispose()
        if as_json:
            print_json(
                {
                    "database": db.url.render(),
                    "from": before,
                    "to": after,
                    "changed": before != after,
                }
            )
        elif before == after:
            console.print(f"{db.url.render()} is up to date (revision {after})")
        else:
            console.print(f"upgraded {db.url.render()} from {before or 'empty'} to {after}")

    run(_go(), as_json=as_json)


@app.command("current")
def current(as_json: bool = JsonOption) -> None:
    """Show the schema revision of the database and the one this version needs."""

    async def _go() -> None:
        settings = get_settings()
        db = configured_database(settings, local_only=True)
        try:
            revision = await current_revision(db)
        finally:
            await db.dispose()
        head = head_revision()
        if as_json:
            print_json({"database": db.url.render(), "current": revision, "head": head})
        else:
            state = "up to date" if revision == head else "needs `valuerank db upgrade`"
            console.print(f"{db.url.render()}: revision {revision or 'none'} ({state})")

    run(_go(), as_json=as_json)
