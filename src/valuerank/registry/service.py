"""The model registry: the global `models` table, seeded from the catalog, edited by people.

The catalog (`valuerank.providers.catalog`) only *seeds* the registry: `seed_models` inserts
the models the table lacks and never touches a row that exists, so edited weights, prices and
active flags survive every reseed (and so do a catalog's later price changes not reach an
existing row: correct them with `update_model`). The table is the one source of prices for
cost figures (`prices_for`).

Model ids are `provider:name` as in the CLI. Lookups also accept the catalog's aliases
(`anthropic:claude-3.5-haiku`) and ignore a query string (`scripted:contrarian?seed=3`).
"""

from __future__ import annotations

import enum
import math
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from sqlalchemy import Row, bindparam, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db import Database
from valuerank.db.tables import models
from valuerank.errors import InvalidInputError, NotFoundError
from valuerank.providers.catalog import (
    CAPABILITIES,
    CatalogModel,
    catalog_model,
    registered_models,
)
from valuerank.providers.costs import ModelPrice
from valuerank.providers.model_id import InvalidModelId, ModelId, parse_model_id
from valuerank.providers.presets import known_providers

# Column sizes of the `models` table.
MAX_DISPLAY_NAME = 300
MAX_CATEGORY = 64
MAX_VERSION = 100
MAX_NAME = 200


class UnknownModelError(InvalidInputError):
    """A model named in a request that the registry does not know (or knows as inactive)."""

    code = "UNKNOWN_MODEL"


class ModelNotFoundError(NotFoundError):
    code = "MODEL_NOT_FOUND"


class _Unset(enum.Enum):
    UNSET = "UNSET"


# "Leave as it is" for `update_model`/`upsert_model` (None is a value: an unknown price).
UNSET: Final = _Unset.UNSET


@dataclass(frozen=True)
class RegisteredModel:
    """One registry row. `id` is the model id (`provider:name`); `row_id` the row's key."""

    id: str
    row_id: str
    provider: str
    name: str
    display_name: str
    version: str
    category: str
    capabilities: tuple[str, ...]
    weight: float
    active: bool
    input_price_per_mtok: float | None
    output_price_per_mtok: float | None
    created_at: datetime | None

    @property
    def priced(self) -> bool:
        return self.input_price_per_mtok is not None and self.output_price_per_mtok is not None

    def supports(self, capability: str) -> bool:
        return capability in self.capabilities

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "provider": self.provider,
            "name": self.name,
            "display_name": self.display_name,
            "version": self.version,
            "category": self.category,
            "capabilities": list(self.capabilities),
            "weight": self.weight,
            "active": self.active,
            "input_price_per_mtok": self.input_price_per_mtok,
            "output_price_per_mtok": self.output_price_per_mtok,
            "created_at": self.created_at.isoformat() if self.created_at else None,
        }


@dataclass(frozen=True)
class SeedResult:
    inserted: tuple[str, ...]
    existing: int

    def to_dict(self) -> dict[str, Any]:
        return {"inserted": list(self.inserted), "existing": self.existing}


def _from_row(row: Row[Any]) -> RegisteredModel:
    caps = row.capabilities or []
    return RegisteredModel(
        id=f"{row.provider}:{row.name}",
        row_id=row.id,
        provider=row.provider,
        name=row.name,
        display_name=row.display_name,
        version=row.version,
        category=row.category,
        capabilities=tuple(str(c) for c in caps),
        weight=float(row.weight),
        active=bool(row.active),
        input_price_per_mtok=row.input_price_per_mtok,
        output_price_per_mtok=row.output_price_per_mtok,
        created_at=row.created_at,
    )


def _catalog_values(model: CatalogModel) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "provider": model.provider,
        "name": model.name,
        "display_name": model.display_name,
        "version": "",
        "category": model.category,
        "capabilities": list(model.capabilities),
        "weight": model.weight,
        "active": model.active,
        "input_price_per_mtok": model.input_price_per_mtok,
        "output_price_per_mtok": model.output_price_per_mtok,
    }


def _insert(conn: AsyncConnection) -> Any:
    return postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert


def _parse(model_id: str | ModelId) -> ModelId:
    if isinstance(model_id, ModelId):
        return model_id
    if "\x00" in model_id:  # no model has one, and PostgreSQL refuses it in a query
        raise InvalidInputError("a model id cannot hold a NUL character")
    try:
        return parse_model_id(model_id)
    except InvalidModelId as exc:
        raise InvalidInputError(
            str(exc), hint="model ids are 'provider:model', e.g. 'openai:gpt-4.1'"
        ) from None


def _candidate_names(mid: ModelId) -> list[str]:
    """The names a lookup of `mid` tries, in order: as given, without a query, the alias's."""
    names = [mid.name]
    base = mid.name.split("?", 1)[0]
    if base not in names:
        names.append(base)
    entry = catalog_model(str(mid))
    if entry is not None and entry.name not in names:
        names.append(entry.name)
    return names


# Built once: every model call reads its prices.
_MODELS_NAMED = select(models).where(
    models.c.provider == bindparam("provider"),
    models.c.name.in_(bindparam("names", expanding=True)),
)


async def find_model(conn: AsyncConnection, mid: ModelId) -> RegisteredModel | None:
    """The registry entry of `mid` (aliases and a query string allowed), or None."""
    names = _candidate_names(mid)
    rows = (await conn.execute(_MODELS_NAMED, {"provider": mid.provider, "names": names})).all()
    by_name = {row.name: row for row in rows}
    for name in names:
        if name in by_name:
            return _from_row(by_name[name])
    return None


async def seed_models(
    conn: AsyncConnection, catalog: Iterable[CatalogModel] | None = None
) -> SeedResult:
    """Insert the catalog's models the registry lacks; existing rows are left untouched.
    The catalog is every registered adapter's models unless one is given."""
    entries = list(registered_models() if catalog is None else catalog)
    if not entries:
        return SeedResult((), 0)
    stmt = (
        _insert(conn)(models)
        .values([_catalog_values(m) for m in entries])
        .on_conflict_do_nothing(index_elements=["provider", "name"])
        .returning(models.c.provider, models.c.name)
    )
    inserted = {f"{r.provider}:{r.name}" for r in (await conn.execute(stmt)).all()}
    ordered = tuple(m.id for m in entries if m.id in inserted)
    return SeedResult(inserted=ordered, existing=len(entries) - len(ordered))


async def list_models(
    conn: AsyncConnection, *, provider: str | None = None, active_only: bool = False
) -> list[RegisteredModel]:
    """Registered models, sorted by provider then name."""
    query = select(models)
    if provider is not None:
        query = query.where(models.c.provider == provider.strip().lower())
    if active_only:
        query = query.where(models.c.active.is_(True))
    found = [_from_row(row) for row in (await conn.execute(query)).all()]
    # Sorted here, not in SQL: the same (code point) order whatever the database's collation.
    return sorted(found, key=lambda m: (m.provider, m.name))


async def ensure_seeded(conn: AsyncConnection) -> None:
    """Seed an empty registry from the catalog (a fresh install's first read)."""
    if await conn.scalar(select(models.c.id).limit(1)) is None:
        await seed_models(conn)


async def ensure_registry(db: Database) -> None:
    """`ensure_seeded` for readers: look in a read transaction, and seed in a write
    transaction of its own only when the registry is empty. (A read transaction that turns
    into a write fails at once on SQLite — "database is locked" — when a worker committed in
    between, whatever the busy timeout.)"""
    async with db.transaction() as conn:
        if await conn.scalar(select(models.c.id).limit(1)) is not None:
            return
    async with db.transaction(immediate=True) as conn:
        await ensure_seeded(conn)


async def get_model(conn: AsyncConnection, model_id: str | ModelId) -> RegisteredModel:
    """The registry entry of `provider:name` (aliases and query strings allowed)."""
    mid = _parse(model_id)
    found = await find_model(conn, mid)
    if found is None:
        raise ModelNotFoundError(
            f"model {str(mid)!r} is not in the registry",
            hint="`valuerank models list --all` shows the registry; `valuerank models seed` "
            "adds the built-in catalog",
        )
    return found


async def prices_for(conn: AsyncConnection, model_id: str | ModelId) -> tuple[float, float] | None:
    """(input, output) USD per million tokens, or None when unregistered or a price unknown."""
    found = await find_model(conn, _parse(model_id))
    if found is None or found.input_price_per_mtok is None or found.output_price_per_mtok is None:
        return None
    return found.input_price_per_mtok, found.output_price_per_mtok


async def price_list(conn: AsyncConnection, model_ids: Sequence[str | ModelId]) -> list[ModelPrice]:
    """One `ModelPrice` per id, in order, for `costs.estimate_run_cost` (None: unknown)."""
    prices: list[ModelPrice] = []
    for model_id in model_ids:
        pair = await prices_for(conn, model_id)
        prices.append(ModelPrice(str(model_id), *(pair if pair else (None, None))))
    return prices


def _changes(
    *,
    display_name: str | _Unset,
    version: str | _Unset,
    category: str | _Unset,
    capabilities: Iterable[str] | _Unset,
    weight: float | _Unset,
    active: bool | _Unset,
    input_price_per_mtok: float | _Unset | None,
    output_price_per_mtok: float | _Unset | None,
) -> dict[str, Any]:
    """The validated column values of the fields given (UNSET ones are left out)."""
    values: dict[str, Any] = {}
    if display_name is not UNSET:
        values["display_name"] = check_text("display_name", display_name, MAX_DISPLAY_NAME)
    if version is not UNSET:
        values["version"] = check_text("version", version, MAX_VERSION, allow_empty=True)
    if category is not UNSET:
        values["category"] = check_text("category", category, MAX_CATEGORY)
    if capabilities is not UNSET:
        caps = list(dict.fromkeys(str(c).strip() for c in capabilities))
        unknown = [c for c in caps if c not in CAPABILITIES]
        if unknown:
            raise InvalidInputError(
                f"unknown capabilit{'ies' if len(unknown) > 1 else 'y'}: {', '.join(unknown)}",
                hint=f"known: {', '.join(CAPABILITIES)}",
            )
        values["capabilities"] = caps
    if weight is not UNSET:
        values["weight"] = _number("weight", weight)
    if active is not UNSET:
        values["active"] = bool(active)
    if input_price_per_mtok is not UNSET:
        values["input_price_per_mtok"] = _price("input price", input_price_per_mtok)
    if output_price_per_mtok is not UNSET:
        values["output_price_per_mtok"] = _price("output price", output_price_per_mtok)
    return values


def check_text(field: str, value: str, limit: int, *, allow_empty: bool = False) -> str:
    """`value` stripped; INVALID_INPUT when empty (unless allowed), longer than `limit`, or
    holding a NUL character (which PostgreSQL cannot store)."""
    text = value.strip()
    if not text and not allow_empty:
        raise InvalidInputError(f"{field} must not be empty")
    if "\x00" in text:
        raise InvalidInputError(f"{field} must not contain NUL characters")
    if len(text) > limit:
        raise InvalidInputError(f"{field} is longer than {limit} characters")
    return text


def _number(field: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(f"{field} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise InvalidInputError(f"{field} must be a finite number >= 0, got {value!r}")
    return number


def _price(field: str, value: float | None) -> float | None:
    return None if value is None else _number(f"{field} (USD per million tokens)", value)


async def update_model(
    conn: AsyncConnection,
    model_id: str | ModelId,
    *,
    display_name: str | _Unset = UNSET,
    version: str | _Unset = UNSET,
    category: str | _Unset = UNSET,
    capabilities: Iterable[str] | _Unset = UNSET,
    weight: float | _Unset = UNSET,
    active: bool | _Unset = UNSET,
    input_price_per_mtok: float | _Unset | None = UNSET,
    output_price_per_mtok: float | _Unset | None = UNSET,
) -> RegisteredModel:
    """Change the given fields of a registered model (NOT_FOUND when it is not registered).

    A price of None means "unknown" (not free); leave a field UNSET to keep it.
    """
    values = _changes(
        display_name=display_name,
        version=version,
        category=category,
        capabilities=capabilities,
        weight=weight,
        active=active,
        input_price_per_mtok=input_price_per_mtok,
        output_price_per_mtok=output_price_per_mtok,
    )
    current = await get_model(conn, model_id)
    if values:
        await conn.execute(update(models).where(models.c.id == current.row_id).values(**values))
    return await get_model(conn, current.id)


async def upsert_model(
    conn: AsyncConnection,
    model_id: str | ModelId,
    *,
    display_name: str | _Unset = UNSET,
    version: str | _Unset = UNSET,
    category: str | _Unset = UNSET,
    capabilities: Iterable[str] | _Unset = UNSET,
    weight: float | _Unset = UNSET,
    active: bool | _Unset = UNSET,
    input_price_per_mtok: float | _Unset | None = UNSET,
    output_price_per_mtok: float | _Unset | None = UNSET,
) -> RegisteredModel:
    """Register a model, or change the given fields of a registered one.

    A new model starts from its catalog entry when it has one, else from blank defaults
    (display name = the model name, weight 1, active, prices unknown); the given fields
    override those. Its provider must be a known one.
    """
    fields: dict[str, Any] = {
        "display_name": display_name,
        "version": version,
        "category": category,
        "capabilities": capabilities,
        "weight": weight,
        "active": active,
        "input_price_per_mtok": input_price_per_mtok,
        "output_price_per_mtok": output_price_per_mtok,
    }
    values = _changes(**fields)
    mid = _parse(model_id)
    existing = await find_model(conn, mid)
    if existing is not None:
        return await update_model(conn, existing.id, **fields)
    if mid.provider not in known_providers():
        raise InvalidInputError(
            f"unknown provider {mid.provider!r}",
            hint=f"known providers: {', '.join(known_providers())}",
        )
    if "?" in mid.name or len(mid.name) > MAX_NAME:
        raise InvalidInputError(
            f"{str(mid)!r} cannot be registered: the name must have no query string "
            f"and at most {MAX_NAME} characters"
        )
    entry = catalog_model(str(mid))
    row: dict[str, Any]
    if entry is not None:
        row = _catalog_values(entry)
    else:
        row = {
            "id": str(uuid.uuid4()),
            "provider": mid.provider,
            "name": mid.name,
            "display_name": mid.name,
            "version": "",
            "category": "",
            "capabilities": [],
            "weight": 1.0,
            "active": True,
            "input_price_per_mtok": None,
            "output_price_per_mtok": None,
        }
    row.update(values)
    await conn.execute(
        _insert(conn)(models)
        .values(**row)
        .on_conflict_do_nothing(index_elements=["provider", "name"])
    )
    # A concurrent insert of the same model may have won: apply the changes to that row too.
    return await update_model(conn, f"{row['provider']}:{row['name']}", **fields)
