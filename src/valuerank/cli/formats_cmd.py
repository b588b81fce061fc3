"""`valuerank formats check`: recognise, parse and report on the original CLI's files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from valuerank.cli.common import JsonOption, console, print_json
from valuerank.definitions.errors import DefinitionError
from valuerank.definitions.service import parse_and_check
from valuerank.formats import check_file

app = typer.Typer(help="The original ValueRank CLI's file formats.", no_args_is_help=True)

_SUFFIXES = {".md", ".yaml", ".yml"}


def _files(paths: list[Path]) -> list[Path]:
    """The files named, and the CLI-format files inside any folder named."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*") if p.suffix in _SUFFIXES))
        else:
            found.append(path)
    return found


def _check(path: Path) -> dict[str, Any]:
    result: dict[str, Any] = {"path": str(path)}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return {**result, "kind": None, "ok": False, "error": f"cannot read: {exc}"}
    report = check_file(path.name, text)
    result.update(report.to_dict())
    result["path"] = str(path)
    if report.ok and report.kind == "definition":
        try:  # matching rules are checked against the dimensions too
            parse_and_check(text, str(path))
        except DefinitionError as exc:
            result.update(ok=False, error=exc.render())
    return result


@app.command("check")
def check(
    paths: list[Path] = typer.Argument(..., help="Files or folders to check."),
    as_json: bool = JsonOption,
) -> None:
    """Detect the kind of each file, parse it and report; exit 1 if any is invalid."""
    results = [_check(p) for p in _files(paths)]
    invalid = [r for r in results if not r["ok"]]
    if as_json:
        print_json(
            {"files": results, "valid": len(results) - len(invalid), "invalid": len(invalid)}
        )
    else:
        table = Table("file", "kind", "status", "details")
        for r in results:
            status = "[green]ok[/]" if r["ok"] else "[red]invalid[/]"
            details = r.get("error") or ", ".join(
                f"{k}: {v}" for k, v in r.get("summary", {}).items()
            )
            table.add_row(r["path"], r.get("kind") or "?", status, details)
            for warning in r.get("warnings", []):
                table.add_row("", "", "[yellow]warning[/]", warning)
        console.print(table)
        console.print(f"{len(results) - len(invalid)} valid, {len(invalid)} invalid")
    if invalid or not results:
        raise typer.Exit(1)
