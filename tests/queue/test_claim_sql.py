"""The claiming statements as composed text: what is printed is what runs, and PostgreSQL
accepts every shape (PREPARE parses, resolves and type-checks a statement without running it)."""

from __future__ import annotations

import re

import pytest

from valuerank.db import Database
from valuerank.queue.claim_pg import ClaimShape, kinds_clause, statement_text
from valuerank.queue.claim_sql import PG_CLAIM, PG_CLAIM_ALONE, PG_CLAIM_FAST, pg_sql
from valuerank.queue.dialect import compact_sql

# (n, kinds, window): any kind, no kind, one kind, a kind that needs quoting, a wide window.
CALLS: list[tuple[int, tuple[str, ...] | None, int]] = [
    (5, None, 21),
    (1, (), 17),
    (8, ("probe",), 24),
    (3, ("a", "b'c"), 2000),
]

_BIND = re.compile(r"(?<![:\w]):(\w+)")
_ARRAYS = re.compile(r"(full|closed|bucket)_\w+")


def _uncommented(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("--"))


@pytest.mark.parametrize("shape", list(ClaimShape))
@pytest.mark.parametrize(("n", "kinds", "window"), CALLS)
def test_the_printed_statement_is_the_one_that_runs(
    shape: ClaimShape, n: int, kinds: tuple[str, ...] | None, window: int
) -> None:
    ran = pg_sql(shape, n, kinds, window)
    assert ran == compact_sql(statement_text(shape, n, kinds, window))
    printed = statement_text(shape, n, kinds, window, comments=True)
    assert printed.count("\n-- ") >= 5  # every part says what it is for
    assert compact_sql(_uncommented(printed)) == ran
    assert f"LIMIT {n} FOR UPDATE OF jj SKIP LOCKED" in ran and f"LIMIT {window} )" in ran
    assert kinds_clause(kinds) in ran


def test_the_shapes_differ_only_where_they_must() -> None:
    general, fast, alone = (
        pg_sql(s, 4, None, 20) for s in (PG_CLAIM, PG_CLAIM_FAST, PG_CLAIM_ALONE)
    )
    # GENERAL: the claim alone; its exclusions are bound arrays, it writes nothing else.
    assert general.startswith("WITH RECURSIVE parts(p) AS")
    assert ":full_orgs" in general and "INSERT " not in general and "guard" not in general
    # FAST: guarded, and writes the events and counters; no arrays to bind.
    assert fast.startswith("WITH RECURSIVE guard AS MATERIALIZED")
    assert "INSERT INTO events" in fast and "INSERT INTO queue_controls" in fast
    assert ":full_orgs" not in fast and "pg_notify" in fast
    # ALONE: FAST that also stands back while any webhook is active.
    assert alone == fast.replace(
        "false AS hooked", "EXISTS (SELECT 1 FROM webhooks w WHERE w.active) AS hooked"
    )
    assert kinds_clause(None) == "" and kinds_clause(()) == "AND false"
    assert kinds_clause(("it's",)) == "AND j.kind IN ('it''s')"


def _prepared(sql: str) -> tuple[str, list[str]]:
    """`sql` with its `:name` parameters as `$n`, and their types in order."""
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    text = _BIND.sub(number, sql)
    types = [
        "text[]" if _ARRAYS.fullmatch(name) else "float8" if name == "lease_seconds" else "text"
        for name in names
    ]
    return text, types


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
@pytest.mark.parametrize("comments", [False, True], ids=["as-run", "as-printed"])
async def test_postgresql_accepts_every_shape(db: Database, comments: bool) -> None:
    async with db.transaction() as conn:
        for i, shape in enumerate(ClaimShape):
            for j, (n, kinds, window) in enumerate(CALLS):
                sql = (
                    statement_text(shape, n, kinds, window, comments=True)
                    if comments
                    else pg_sql(shape, n, kinds, window)
                )
                text, types = _prepared(sql)
                name = f"claim_{i}_{j}"
                await conn.exec_driver_sql(f"PREPARE {name}({', '.join(types)}) AS {text}")
                await conn.exec_driver_sql(f"DEALLOCATE {name}")
