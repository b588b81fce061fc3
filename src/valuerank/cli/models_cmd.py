"""`valuerank models …`: the model registry (weights, active flags, prices), shared by all orgs."""

from __future__ import annotations

import math
from typing import Any

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from valuerank.cli.common import JsonOption, console, fail, local_or_server, print_json, session
from valuerank.client import admin as remote
from valuerank.registry import (
    UNSET,
    get_model,
    list_models,
    seed_models,
    update_model,
    upsert_model,
)

app = typer.Typer(
    help="The model registry: which models exist, their weights, prices and active flags.",
    no_args_is_help=True,
)

UNKNOWN_WORDS = ("unknown", "none", "-")

WeightOption = typer.Option(None, "--weight", help="Weight in consensus (>= 0).")
ActiveOption = typer.Option(
    None, "--active/--inactive", help="Offer the model for runs, or hide it."
)
InputPriceOption = typer.Option(
    None, "--input-price", metavar="USD", help="USD per million input tokens, or 'unknown'."
)
OutputPriceOption = typer.Option(
    None, "--output-price", metavar="USD", help="USD per million output tokens, or 'unknown'."
)
DisplayNameOption = typer.Option(None, "--display-name", help="Name shown to people.")
CategoryOption = typer.Option(
    None, "--category", help="frontier, small, open-weights, local, synthetic, …"
)


def _price_text(value: float | None) -> str:
    return "?" if value is None else f"{value:,.2f}"


def _parse_price(text: str | None, option: str, as_json: bool) -> Any:
    """UNSET when not given, None for 'unknown', else a number >= 0."""
    if text is None:
        return UNSET
    if text.strip().lower() in UNKNOWN_WORDS:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        fail(
            f"{option} must be a number >= 0 (USD per million tokens) or 'unknown', got {text!r}",
            code="INVALID_INPUT",
            as_json=as_json,
        )
    return value


def _changes(
    *,
    weight: float | None,
    active: bool | None,
    input_price: str | None,
    output_price: str | None,
    display_name: str | None,
    category: str | None,
    as_json: bool,
) -> dict[str, Any]:
    changes: dict[str, Any] = {
        "input_price_per_mtok": _parse_price(input_price, "--input-price", as_json),
        "output_price_per_mtok": _parse_price(output_price, "--output-price", as_json),
    }
    if weight is not None:
        if not math.isfinite(weight) or weight < 0:  # here: a server's schema says it otherwise
            fail(
                f"--weight must be a number >= 0, got {weight:g}",
                code="INVALID_INPUT",
                as_json=as_json,
            )
        changes["weight"] = weight
    if active is not None:
        changes["active"] = active
    if display_name is not None:
        changes["display_name"] = display_name
    if category is not None:
        changes["category"] = category
    return {k: v for k, v in changes.items() if v is not UNSET}


def _show(data: dict[str, Any]) -> None:
    table = Table("field", "value", show_header=False)
    for key in ("id", "display_name", "category", "version", "weight", "active"):
        table.add_row(key, escape(str(data[key])))
    table.add_row("capabilities", escape(", ".join(data["capabilities"]) or "-"))
    table.add_row("input $/Mtok", _price_text(data["input_price_per_mtok"]))
    table.add_row("output $/Mtok", _price_text(data["output_price_per_mtok"]))
    console.print(table)


@app.command("list")
def list_(
    provider: str | None = typer.Option(None, "--provider", help="Only this provider's models."),
    include_inactive: bool = typer.Option(
        False, "--all", help="Include inactive models (default: active ones only)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """The registered models with their weights and prices (USD per million tokens).

    With VALUERANK_API_URL set, the server there answers (its GET /api/models), not the
    database."""

    async def _go() -> list[dict[str, Any]]:
        async with session() as s:
            found = await list_models(s.conn, provider=provider, active_only=not include_inactive)
        return [m.to_dict() for m in found]

    data = local_or_server(
        _go,
        lambda server: remote.list_models(
            server, provider=provider, include_inactive=include_inactive
        ),
        as_json=as_json,
    )
    if as_json:
        print_json(data)
        return
    if not data:
        console.print(
            "no models"
            + ("" if include_inactive else " (active)")
            + ": `valuerank models seed` adds the built-in catalog",
            highlight=False,
        )
        return
    # Compact enough for 80 columns; the id (what people copy into commands) never wraps.
    # Display names and capabilities are in `models show` and --json.
    table = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        collapse_padding=True,
        caption="in $ / out $: USD per million input / output tokens",
    )
    table.add_column("id", no_wrap=True)
    table.add_column("category", no_wrap=True)
    table.add_column("weight", justify="right", no_wrap=True)
    table.add_column("active", no_wrap=True)
    table.add_column("in $", justify="right", no_wrap=True)
    table.add_column("out $", justify="right", no_wrap=True)
    for m in data:
        table.add_row(
            escape(m["id"]),
            escape(m["category"]),
            f"{m['weight']:g}",
            "yes" if m["active"] else "[dim]no[/]",
            _price_text(m["input_price_per_mtok"]),
            _price_text(m["output_price_per_mtok"]),
        )
    console.print(table)


@app.command("show")
def show(
    model_id: str = typer.Argument(..., metavar="ID", help="Model id, provider:model."),
    as_json: bool = JsonOption,
) -> None:
    """One model's registry entry.

    With VALUERANK_API_URL set, the server there answers, not the database."""

    async def _go() -> dict[str, Any]:
        async with session() as s:
            return (await get_model(s.conn, model_id)).to_dict()

    data: dict[str, Any] = local_or_server(
        _go, lambda server: server.get(remote.model_path(model_id)), as_json=as_json
    )
    if as_json:
        print_json(data)
        return
    _show(data)


@app.command("set")
def set_(
    model_id: str = typer.Argument(..., metavar="ID", help="Model id, provider:model."),
    weight: float | None = WeightOption,
    active: bool | None = ActiveOption,
    input_price: str | None = InputPriceOption,
    output_price: str | None = OutputPriceOption,
    display_name: str | None = DisplayNameOption,
    category: str | None = CategoryOption,
    as_json: bool = JsonOption,
) -> None:
    """Change a registered model's weight, active flag, prices, name or category.

    With VALUERANK_API_URL set, the server there makes the change (an admin of its default
    organisation: the registry is every organisation's)."""
    changes = _changes(
        weight=weight,
        active=active,
        input_price=input_price,
        output_price=output_price,
        display_name=display_name,
        category=category,
        as_json=as_json,
    )
    if not changes:
        fail(
            "nothing to change",
            code="INVALID_INPUT",
            as_json=as_json,
            hint="give --weight, --active/--inactive, --input-price, --output-price, "
            "--display-name or --category",
        )

    async def _go() -> dict[str, Any]:
        async with session() as s:
            return (await update_model(s.conn, model_id, **changes)).to_dict()

    data: dict[str, Any] = local_or_server(
        _go,
        lambda server: remote.send_changes(server, model_id, changes, new=False),
        as_json=as_json,
    )
    if as_json:
        print_json(data)
        return
    console.print(f"updated [bold]{escape(data['id'])}[/]", highlight=False)
    _show(data)


@app.command("add")
def add(
    model_id: str = typer.Argument(..., metavar="ID", help="Model id, provider:model."),
    weight: float | None = WeightOption,
    active: bool | None = ActiveOption,
    input_price: str | None = InputPriceOption,
    output_price: str | None = OutputPriceOption,
    display_name: str | None = DisplayNameOption,
    category: str | None = CategoryOption,
    as_json: bool = JsonOption,
) -> None:
    """Register a model the catalog lacks (or change one that is registered).

    With VALUERANK_API_URL set, the server there registers it (an admin of its default
    organisation)."""
    changes = _changes(
        weight=weight,
        active=active,
        input_price=input_price,
        output_price=output_price,
        display_name=display_name,
        category=category,
        as_json=as_json,
    )

    async def _go() -> dict[str, Any]:
        async with session() as s:
            return (await upsert_model(s.conn, model_id, **changes)).to_dict()

    data: dict[str, Any] = local_or_server(
        _go,
        lambda server: remote.send_changes(server, model_id, changes, new=True),
        as_json=as_json,
    )
    if as_json:
        print_json(data)
        return
    console.print(f"registered [bold]{escape(data['id'])}[/]", highlight=False)
    _show(data)


@app.command("seed")
def seed(as_json: bool = JsonOption) -> None:
    """Add the built-in catalog's models the registry lacks; edited models stay as they are.

    With VALUERANK_API_URL set, the server there seeds its registry (an admin of its default
    organisation)."""

    async def _go() -> dict[str, Any]:
        async with session() as s:
            return (await seed_models(s.conn)).to_dict()

    data: dict[str, Any] = local_or_server(
        _go, lambda server: server.post("/api/models/seed"), as_json=as_json
    )
    if as_json:
        print_json(data)
        return
    console.print(
        f"added {len(data['inserted'])} models; {data['existing']} already registered",
        highlight=False,
    )
