"""`valuerank transcripts …`: people as judges. A person reads a transcript and records the
values it prioritises and deprioritises (from the run's rubric), stored beside the models'
judgments (runs/human_readings.py); `read-next` walks a run's random sample in the order
fixed for that person. Without `--user` the reader is the install's local admin (the account
the web UI's auto-login signs in as); with VALUERANK_API_URL set, the server answers and the
reader is its token's user (`--user` is refused: a token reads as its own user only)."""

from __future__ import annotations

from typing import Any

import typer
from rich.markup import escape
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.accounts import Role, ensure_local_admin, find_user, get_member
from valuerank.cli.common import (
    JsonOption,
    api_client,
    console,
    local_or_server,
    print_json,
    session,
)
from valuerank.cli.local_options import refuse_option
from valuerank.client import transcripts as remote
from valuerank.config import get_settings
from valuerank.runs.human_readings import (
    ReaderRoleError,
    delete_reading,
    list_readings,
    next_unread,
    read_target,
    record_reading,
)
from valuerank.runs.service import get_run

app = typer.Typer(
    help="Transcripts read by people: record a reading, list them, the next one to read.",
    no_args_is_help=True,
)

TranscriptArg = typer.Argument(..., help="Transcript id.")
UserOption = typer.Option(
    None, "--user", help="Email of the member reading (default: the local admin)."
)


def _no_user_through_a_server(user: str | None, *, as_json: bool) -> None:
    """With a server, the reader is the token's user: `--user` (another member) is refused."""
    server = api_client(get_settings())
    if server is not None and user is not None:
        refuse_option(
            server,
            "--user",
            "reads as another member",
            hint="through a server you read as the user of VALUERANK_API_TOKEN: drop --user, "
            "or use that member's own token",
            as_json=as_json,
        )


async def _reader(conn: AsyncConnection, org_id: str, email: str | None) -> str:
    """The reading member's user id; a viewer may not record readings."""
    if email is None:
        return await ensure_local_admin(conn, org_id)
    member = await get_member(conn, org_id, (await find_user(conn, email)).id)
    if not member.role.allows(Role.MEMBER):
        raise ReaderRoleError(
            f"{member.user.email} is a viewer in this organisation: viewers read, never record",
            hint="valuerank users set-role EMAIL member",
        )
    return member.user.id


@app.command("read")
def read(
    transcript: str = TranscriptArg,
    prioritized: list[str] = typer.Option(
        [], "--prioritized", "-p", help="A value the answer prioritises (repeat the option)."
    ),
    deprioritized: list[str] = typer.Option(
        [], "--deprioritized", "-d", help="A value the answer deprioritises (repeat it)."
    ),
    note: str = typer.Option("", "--note", help="What made you read it so."),
    user: str | None = UserOption,
    as_json: bool = JsonOption,
) -> None:
    """Record your reading of TRANSCRIPT (replacing an earlier one): the values of the run's
    rubric it prioritises and deprioritises. UNKNOWN_VALUE names a value not in the rubric.

    With VALUERANK_API_URL set, the server there records it as the token's user."""
    _no_user_through_a_server(user, as_json=as_json)

    async def _go() -> dict[str, Any]:
        async with session() as s:
            reader = await _reader(s.conn, s.org_id, user)
            found = await record_reading(
                s.conn, s.org_id, transcript, reader, prioritized, deprioritized, note
            )
        return found.to_dict()

    data = local_or_server(
        _go,
        lambda c: remote.record_reading(c, transcript, prioritized, deprioritized, note),
        as_json=as_json,
    )
    if as_json:
        print_json(data)
        return
    console.print(
        f"{escape(data['reader'])} read {escape(data['transcript_id'])}: prioritises "
        f"{escape(', '.join(data['prioritized_values']) or '-')}; deprioritises "
        f"{escape(', '.join(data['deprioritized_values']) or '-')}",
        highlight=False,
    )


@app.command("readings")
def readings(transcript: str = TranscriptArg, as_json: bool = JsonOption) -> None:
    """People's readings of TRANSCRIPT, and the rubric's values a reading may name.

    With VALUERANK_API_URL set, the server there answers, not the database."""

    async def _go() -> dict[str, Any]:
        async with session() as s:
            target = await read_target(s.conn, s.org_id, transcript)
            found = await list_readings(s.conn, s.org_id, target.transcript_id)
        return {
            "transcript_id": target.transcript_id,
            "run_id": target.run_id,
            "rubric": target.rubric,
            "values": list(target.values),
            "readings": [r.to_dict() for r in found],
        }

    data = local_or_server(_go, lambda c: remote.list_readings(c, transcript), as_json=as_json)
    if as_json:
        print_json(data)
        return
    console.print(f"values: {escape(', '.join(data['values']) or '(no rubric)')}", highlight=False)
    for r in data["readings"]:
        console.print(
            f"{escape(r['reader'])}: + {escape(', '.join(r['prioritized_values']) or '-')}"
            f"  − {escape(', '.join(r['deprioritized_values']) or '-')}",
            highlight=False,
        )
    if not data["readings"]:
        console.print("nobody has read it yet", style="dim")


@app.command("unread")
def unread(
    transcript: str = TranscriptArg, user: str | None = UserOption, as_json: bool = JsonOption
) -> None:
    """Delete your reading of TRANSCRIPT (READING_NOT_FOUND when you have none).

    With VALUERANK_API_URL set, the server there deletes the token's user's reading."""
    _no_user_through_a_server(user, as_json=as_json)

    async def _go() -> dict[str, Any]:
        async with session() as s:
            reader = await _reader(s.conn, s.org_id, user)
            await delete_reading(s.conn, s.org_id, transcript, reader)
        return {"deleted": True, "transcript_id": transcript}

    data = local_or_server(_go, lambda c: remote.delete_reading(c, transcript), as_json=as_json)
    if as_json:
        print_json(data)
        return
    console.print(f"deleted your reading of {escape(transcript)}", highlight=False)


@app.command("read-next")
def read_next(
    run_id: str = typer.Argument(..., help="Run id."),
    user: str | None = UserOption,
    as_json: bool = JsonOption,
) -> None:
    """The next transcript of RUN you have not read (the run's transcripts in an order fixed
    for you), and how many you have read.

    With VALUERANK_API_URL set, the server there answers for the token's user."""
    _no_user_through_a_server(user, as_json=as_json)

    async def _go() -> dict[str, Any]:
        async with session() as s:
            reader = await _reader(s.conn, s.org_id, user)
            chosen = await get_run(s.conn, s.org_id, run_id)
            return (await next_unread(s.conn, s.org_id, chosen.id, reader)).to_dict()

    data = local_or_server(_go, lambda c: remote.next_unread(c, run_id), as_json=as_json)
    if as_json:
        print_json(data)
        return
    head = f"{data['read']} of {data['total']} read"
    if data["next_transcript_id"] is None:
        console.print(f"{head}: none left", highlight=False)
    else:
        console.print(
            f"{head}; next: {escape(data['next_transcript_id'])} "
            f"(valuerank transcripts read {escape(data['next_transcript_id'])} -p VALUE …)",
            highlight=False,
        )
