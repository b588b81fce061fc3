"""What the CLI prints, shared by its commands and by the entry point's fast path (which
answers before Typer loads): JSON for scripts, errors with a code, a run's status in words.
Rich loads only when something is printed for a person."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any


def print_json(data: Any) -> None:
    """JSON on stdout, unwrapped, for scripts."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def show_error(message: str, *, code: str, as_json: bool, hint: str | None = None) -> None:
    """An error: `{"success": false, "error", "code", "hint"}` on stdout with --json, else
    red on stderr."""
    if as_json:
        payload: dict[str, Any] = {"success": False, "error": message, "code": code}
        if hint:
            payload["hint"] = hint
        print_json(payload)
        return
    from rich.console import Console
    from rich.markup import escape

    err = Console(stderr=True)
    # soft_wrap: never break a file path or an id across lines.
    err.print("[bold red]error:[/]", escape(message), soft_wrap=True, highlight=False)
    if hint:
        err.print("[dim]hint:[/]", escape(hint), soft_wrap=True, highlight=False)


def print_run_status(data: Mapping[str, Any], *, as_json: bool) -> None:
    """A run's status (`runs status`): the report as JSON, or its status, progress, cost,
    ETA and error in words."""
    if as_json:
        print_json(data)
        return
    from rich.console import Console
    from rich.markup import escape

    out = Console()
    eta = "" if data["eta_seconds"] in (None, 0.0) else f", ETA {data['eta_seconds']:.0f} s"
    name = escape(str(data["name"]))
    out.print(f"run [bold]{data['id']}[/] {name}: [bold]{data['status']}[/]{eta}")
    progress = "  ".join(f"{k}: {v}" for k, v in data["progress"].items())
    out.print(f"{progress}  cost: ${data['cost_usd']:.4f}")
    asked = (data.get("phrasings", "first"), data.get("scale_order", "as-written"))
    if asked != ("first", "as-written"):  # how each scenario was asked (docs/runs.md)
        out.print(f"phrasings: {asked[0]}  scale order: {asked[1]}")
    if data["error"]:
        out.print(f"[red]{escape(str(data['error']))}[/]")
