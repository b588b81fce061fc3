"""`valuerank definitions …`: import, list, show, fork, lineage, tree, diff, export."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table
from rich.tree import Tree

from valuerank.cli.common import (
    JsonOption,
    console,
    print_json,
    read_text,
    run,
    session,
    write_atomically,
)
from valuerank.definitions import service
from valuerank.definitions.diff import render_diff
from valuerank.definitions.rules import rules_for
from valuerank.refs import short_id
from valuerank.versioning import TreeNode, Version

app = typer.Typer(
    help="Versioned scenario definitions: import, fork, compare, export.",
    no_args_is_help=True,
)

IdArg = typer.Argument(..., help="Definition version id (or a unique prefix of it).")


def _label(version: Version) -> str:
    return f"[bold]{version.name}[/] [cyan]{version.version_label}[/] [dim]{version.id}[/]"


@app.command("import")
def import_(
    file: Path = typer.Argument(..., help="A definition file written by the CLI (exp-*.md)."),
    label: str | None = typer.Option(None, "--label", help="Version label (default v1)."),
    as_json: bool = JsonOption,
) -> None:
    """Store a definition file as a new version lineage."""

    async def _go() -> None:
        text = read_text(file)
        service.parse_and_check(text, str(file))  # fail before touching the database
        async with session() as s:
            stored, created = await service.import_definition(
                s.conn, s.org_id, text, source_file=file.name, label=label
            )
        v = stored.version
        if as_json:
            print_json(
                {"id": v.id, "name": v.name, "version_label": v.version_label, "created": created}
            )
        elif created:
            console.print(f"imported {_label(v)}")
        else:
            console.print(f"already stored as {_label(v)} (same content): nothing imported")

    run(_go(), as_json=as_json)


@app.command("list")
def list_(as_json: bool = JsonOption) -> None:
    """List every definition version."""

    async def _go() -> None:
        async with session() as s:
            items = await service.list_definitions(s.conn, s.org_id)
        if as_json:
            print_json([i.summary() for i in items])
            return
        if not items:
            console.print("no definitions yet: `valuerank definitions import FILE.md`")
            return
        table = Table("id", "name", "version", "parent", "dimensions", "created")
        table.columns[0].no_wrap = True
        table.columns[1].overflow = "fold"
        for item in items:
            v = item.version
            table.add_row(
                short_id(v.id),  # a unique prefix is enough for every command, as in Git
                v.name,
                v.version_label,
                short_id(v.parent_id or ""),
                ", ".join(d.name for d in item.definition.dimensions),
                v.created_at.strftime("%Y-%m-%d %H:%M"),
            )
        console.print(table)

    run(_go(), as_json=as_json)


@app.command("show")
def show(ref: str = IdArg, as_json: bool = JsonOption) -> None:
    """Show one version: its content, dimensions and matching rules."""

    async def _go() -> None:
        async with session() as s:
            stored = await service.get_definition(s.conn, s.org_id, ref)
        d = stored.definition
        rules = rules_for(d)
        if as_json:
            print_json(stored.detail())
            return
        console.print(_label(stored.version))
        console.print(f"base_id: {d.base_id}   category: {d.category or '-'}")
        if d.preamble:
            console.print("[bold]Preamble[/]", d.preamble, sep="\n")
        console.print("[bold]Template[/]", d.template, sep="\n", highlight=False)
        for dim in d.dimensions:
            table = Table("score", "label", "options", title=dim.name, title_justify="left")
            for level in dim.levels:
                table.add_row(str(level.score), level.label, ", ".join(level.options))
            console.print(table)
        for rule in rules.rules:
            console.print(f"rule: {rule.text}")
        for prose in rules.prose:
            console.print(f"prose rule (not applied automatically): {prose}")

    run(_go(), as_json=as_json)


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
    """Create a child version of a definition version."""

    async def _go() -> None:
        definition = None
        if from_file is not None:
            definition = service.parse_and_check(read_text(from_file), str(from_file))
        async with session() as s:
            stored = await service.fork_definition(
                s.conn,
                s.org_id,
                ref,
                definition=definition,
                label=label,
                source_file=from_file.name if from_file else None,
            )
        v = stored.version
        if as_json:
            print_json(
                {
                    "id": v.id,
                    "name": v.name,
                    "version_label": v.version_label,
                    "parent_id": v.parent_id,
                }
            )
        else:
            console.print(f"forked {_label(v)} from [dim]{v.parent_id}[/]")

    run(_go(), as_json=as_json)


@app.command("lineage")
def lineage(ref: str = IdArg, as_json: bool = JsonOption) -> None:
    """Ancestors (root first) and all descendants of a version."""

    async def _go() -> None:
        async with session() as s:
            result = await service.lineage(s.conn, s.org_id, ref)
        if as_json:
            print_json(result.to_dict())
            return
        chain = [*result.ancestors, result.version]
        console.print("ancestry: " + "  →  ".join(f"{v.version_label}" for v in chain))
        console.print(f"{len(result.descendants)} descendant(s)")
        for v, depth in result.descendants:
            console.print("  " * depth + f"└ {v.version_label} [dim]{v.id}[/]")

    run(_go(), as_json=as_json)


def _rich_tree(node: TreeNode, into: Tree | None = None) -> Tree:
    label = f"{node.version.version_label} [dim]{node.version.id}[/]"
    branch = Tree(label) if into is None else into.add(label)
    for child in node.children:
        _rich_tree(child, branch)
    return branch


@app.command("tree")
def tree(ref: str = IdArg, as_json: bool = JsonOption) -> None:
    """The whole version tree a version belongs to, from its root."""

    async def _go() -> None:
        async with session() as s:
            root = await service.tree(s.conn, s.org_id, ref)
        if as_json:
            print_json(root.to_dict())
        else:
            console.print(_rich_tree(root))

    run(_go(), as_json=as_json)


@app.command("diff")
def diff(
    a: str = typer.Argument(..., help="The older version."),
    b: str = typer.Argument(..., help="The newer version."),
    as_json: bool = JsonOption,
) -> None:
    """What changed between two versions: text, dimensions, levels, matching rules."""

    async def _go() -> None:
        async with session() as s:
            result = await service.diff(s.conn, s.org_id, a, b)
        if as_json:
            print_json(result.to_dict())
            return
        for line in render_diff(result):
            style = "green" if line.lstrip().startswith("+") else None
            style = "red" if line.lstrip().startswith("-") else style
            console.print(line, style=style, highlight=False, markup=False, soft_wrap=True)

    run(_go(), as_json=as_json)


@app.command("export")
def export(
    ref: str = IdArg,
    output: Path | None = typer.Option(
        None, "-o", "--output", help="File to write (default: stdout)."
    ),
) -> None:
    """Write a version as a CLI definition file (exp-*.md)."""

    async def _go() -> str:
        async with session() as s:
            return await service.export_markdown(s.conn, s.org_id, ref)

    text = run(_go())
    if output is None:
        typer.echo(text, nl=False)
    else:
        write_atomically(output, text)
        console.print(f"wrote {output}")
