"""`valuerank definitions …`: import, list, show, fork, lineage, tree, diff, export.

Each command prints what it got in one shape from either side: the database's
`summary()`/`detail()`/`to_dict()` here, the same dicts from the API with VALUERANK_API_URL
set (client/definitions.py); the text is rendered from those dicts by the same code."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import typer
from rich.table import Table
from rich.tree import Tree

from valuerank.cli.common import (
    JsonOption,
    console,
    local_or_server,
    print_json,
    read_text,
    run,
    session,
    write_atomically,
)
from valuerank.client import definitions as remote
from valuerank.definitions import service
from valuerank.definitions.diff import diff_definitions, render_diff
from valuerank.formats import Definition
from valuerank.refs import short_id

app = typer.Typer(
    help="Versioned scenario definitions: import, fork, compare, export.",
    no_args_is_help=True,
)

IdArg = typer.Argument(..., help="Definition version id (or a unique prefix of it).")


def _label(version: dict[str, Any]) -> str:
    return f"[bold]{version['name']}[/] [cyan]{version['version_label']}[/] [dim]{version['id']}[/]"


def when(iso_time: str) -> str:
    """A version's `created_at` (ISO-8601, UTC) as the tables show it."""
    return datetime.fromisoformat(iso_time).strftime("%Y-%m-%d %H:%M")


def checked_file(file: Path, *, as_json: bool) -> str:
    """The definition file's text, checked before anything is asked of the database or
    the server, with errors that name the user's path and line."""

    async def _read() -> str:
        text = read_text(file)
        service.parse_and_check(text, str(file))
        return text

    return run(_read(), as_json=as_json)


@app.command("import")
def import_(
    file: Path = typer.Argument(..., help="A definition file written by the CLI (exp-*.md)."),
    label: str | None = typer.Option(None, "--label", help="Version label (default v1)."),
    as_json: bool = JsonOption,
) -> None:
    """Store a definition file as a new version lineage. With VALUERANK_API_URL set, the
    file is uploaded to the server."""
    text = checked_file(file, as_json=as_json)

    async def _local() -> dict[str, Any]:
        async with session() as s:
            stored, created = await service.import_definition(
                s.conn, s.org_id, text, source_file=file.name, label=label
            )
        return {**stored.version.summary(), "created": created}

    v = local_or_server(
        _local,
        lambda server: remote.import_definition(server, text, filename=file.name, label=label),
        as_json=as_json,
    )
    if as_json:
        print_json({k: v[k] for k in ("id", "name", "version_label", "created")})
    elif v["created"]:
        console.print(f"imported {_label(v)}")
    else:
        console.print(f"already stored as {_label(v)} (same content): nothing imported")


@app.command("list")
def list_(as_json: bool = JsonOption) -> None:
    """List every definition version. With VALUERANK_API_URL set, the server answers."""

    async def _local() -> list[dict[str, Any]]:
        async with session() as s:
            return [i.summary() for i in await service.list_definitions(s.conn, s.org_id)]

    items = local_or_server(
        _local,
        lambda server: remote.every_page(server, "/api/definitions", "definitions"),
        as_json=as_json,
    )
    if as_json:
        print_json(items)
        return
    if not items:
        console.print("no definitions yet: `valuerank definitions import FILE.md`")
        return
    table = Table("id", "name", "version", "parent", "dimensions", "created")
    table.columns[0].no_wrap = True
    table.columns[1].overflow = "fold"
    for v in items:
        table.add_row(
            short_id(v["id"]),  # a unique prefix is enough for every command, as in Git
            v["name"],
            v["version_label"],
            short_id(v["parent_id"] or ""),
            ", ".join(v["dimensions"]),
            when(v["created_at"]),
        )
    console.print(table)


async def _detail(ref: str) -> dict[str, Any]:
    async with session() as s:
        return (await service.get_definition(s.conn, s.org_id, ref)).detail()


@app.command("show")
def show(ref: str = IdArg, as_json: bool = JsonOption) -> None:
    """Show one version: its content, dimensions and matching rules. With
    VALUERANK_API_URL set, the server answers."""
    detail = local_or_server(
        lambda: _detail(ref), lambda server: remote.definition(server, ref), as_json=as_json
    )
    if as_json:
        print_json(detail)
        return
    d = Definition.from_dict(detail["content"])
    console.print(_label(detail))
    console.print(f"base_id: {d.base_id}   category: {d.category or '-'}")
    if d.preamble:
        console.print("[bold]Preamble[/]", d.preamble, sep="\n")
    console.print("[bold]Template[/]", d.template, sep="\n", highlight=False)
    for dim in d.dimensions:
        table = Table("score", "label", "options", title=dim.name, title_justify="left")
        for level in dim.levels:
            table.add_row(str(level.score), level.label, ", ".join(level.options))
        console.print(table)
    for rule in detail["matching_rules"]["machine"]:
        console.print(f"rule: {rule}")
    for prose in detail["matching_rules"]["prose"]:
        console.print(f"prose rule (not applied automatically): {prose}")


@app.command("fork")
def fork(
    ref: str = IdArg,
    label: str | None = typer.Option(
        None, "--label", help="Version label (default: the parent's label + .N)."
    ),
    from_file: Path | None = typer.Option(
        None, "--from-file", help="New content (exp-*.md); default: a copy of the parent."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Create a child version of a definition version. With VALUERANK_API_URL set, the
    server stores it."""
    text = checked_file(from_file, as_json=as_json) if from_file is not None else None
    source_file = from_file.name if from_file is not None else None

    async def _local() -> dict[str, Any]:
        definition = service.parse_and_check(text, str(from_file)) if text else None
        async with session() as s:
            stored = await service.fork_definition(
                s.conn, s.org_id, ref, definition=definition, label=label, source_file=source_file
            )
        return stored.version.summary()

    v = local_or_server(
        _local,
        lambda server: remote.fork_definition(
            server, ref, label=label, markdown=text, source_file=source_file
        ),
        as_json=as_json,
    )
    if as_json:
        print_json({k: v[k] for k in ("id", "name", "version_label", "parent_id")})
    else:
        console.print(f"forked {_label(v)} from [dim]{v['parent_id']}[/]")


@app.command("lineage")
def lineage(ref: str = IdArg, as_json: bool = JsonOption) -> None:
    """Ancestors (root first) and all descendants of a version. With VALUERANK_API_URL
    set, the server answers."""

    async def _local() -> dict[str, Any]:
        async with session() as s:
            return (await service.lineage(s.conn, s.org_id, ref)).to_dict()

    result = local_or_server(
        _local, lambda server: remote.definition(server, ref, "/lineage"), as_json=as_json
    )
    if as_json:
        print_json(result)
        return
    chain = [*result["ancestors"], result]
    console.print("ancestry: " + "  →  ".join(f"{v['version_label']}" for v in chain))
    console.print(f"{len(result['descendants'])} descendant(s)")
    for v in result["descendants"]:
        console.print("  " * v["depth"] + f"└ {v['version_label']} [dim]{v['id']}[/]")


def _rich_tree(node: dict[str, Any], into: Tree | None = None) -> Tree:
    label = f"{node['version_label']} [dim]{node['id']}[/]"
    branch = Tree(label) if into is None else into.add(label)
    for child in node["children"]:
        _rich_tree(child, branch)
    return branch


@app.command("tree")
def tree(ref: str = IdArg, as_json: bool = JsonOption) -> None:
    """The whole version tree a version belongs to, from its root. With VALUERANK_API_URL
    set, the server answers."""

    async def _local() -> dict[str, Any]:
        async with session() as s:
            return (await service.tree(s.conn, s.org_id, ref)).to_dict()

    root = local_or_server(
        _local, lambda server: remote.definition(server, ref, "/tree"), as_json=as_json
    )
    if as_json:
        print_json(root)
    else:
        console.print(_rich_tree(root))


@app.command("diff")
def diff(
    a: str = typer.Argument(..., help="The older version."),
    b: str = typer.Argument(..., help="The newer version."),
    as_json: bool = JsonOption,
) -> None:
    """What changed between two versions: text, dimensions, levels, matching rules. With
    VALUERANK_API_URL set, the server answers."""

    if as_json:

        async def _local() -> dict[str, Any]:
            async with session() as s:
                before = await service.get_definition(s.conn, s.org_id, a)
                after = await service.get_definition(s.conn, s.org_id, b)
            found = diff_definitions(before.definition, after.definition)
            return {
                "from": before.version.summary(),
                "to": after.version.summary(),
                **found.to_dict(),
            }

        print_json(local_or_server(_local, lambda server: remote.diff(server, a, b), as_json=True))
        return

    # The text is rendered from both versions' content, by the same code either way.
    pair = local_or_server(
        lambda: _both(a, b),
        lambda server: (remote.definition(server, a), remote.definition(server, b)),
        as_json=False,
    )
    before, after = (Definition.from_dict(side["content"]) for side in pair)
    for line in render_diff(diff_definitions(before, after)):
        style = "green" if line.lstrip().startswith("+") else None
        style = "red" if line.lstrip().startswith("-") else style
        console.print(line, style=style, highlight=False, markup=False, soft_wrap=True)


async def _both(a: str, b: str) -> tuple[dict[str, Any], dict[str, Any]]:
    return await _detail(a), await _detail(b)


@app.command("export")
def export(
    ref: str = IdArg,
    output: Path | None = typer.Option(
        None, "-o", "--output", help="File to write (default: stdout)."
    ),
) -> None:
    """Write a version as a CLI definition file (exp-*.md). With VALUERANK_API_URL set,
    the server sends it."""

    async def _local() -> str:
        async with session() as s:
            return await service.export_markdown(s.conn, s.org_id, ref)

    text = local_or_server(
        _local, lambda server: remote.export_markdown(server, ref), as_json=False
    )
    if output is None:
        typer.echo(text, nl=False)
    else:
        run(_write(output, text))
        console.print(f"wrote {output}")


async def _write(path: Path, text: str) -> None:
    write_atomically(path, text)  # in `run`: a failure is OUTPUT_NOT_WRITTEN, exit 1
