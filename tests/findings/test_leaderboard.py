"""The leaderboard of a definition on SQLite and PostgreSQL: an empty board says why (no
completed run; completed runs without judges), a judged run fills it, and sorting by a value
puts models without a rate on it last."""

from __future__ import annotations

import pytest
from tests.lineage_seeding import DEMO, HONESTY, LOYALTY, D, U, seed_run

from valuerank.db import Database
from valuerank.definitions.service import import_definition
from valuerank.errors import InvalidInputError
from valuerank.findings.leaderboard import definition_leaderboard, sorted_models


async def test_an_empty_board_says_why(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org_id, DEMO.read_text())
    root = stored.version.id
    await seed_run(db, org_id, root, {U: [4]}, status="running", name="running", minute=0)
    board = await definition_leaderboard(db, org_id, root)
    assert board["models"] == [] and board["runs"] == []
    assert board["empty"] == "No version of this definition's tree has a completed run yet."

    unjudged = await seed_run(
        db, org_id, root, {U: [4, 2]}, status="completed", name="plain", minute=1, judged=False
    )
    board = await definition_leaderboard(db, org_id, root)
    assert [r["id"] for r in board["runs"]] == [unjudged] and board["runs"][0]["judged"] == 0
    assert board["empty"] is not None and "None of the 1 completed runs" in board["empty"]
    assert board["values"] == [] and board["models"][0]["model"] == U

    await seed_run(db, org_id, root, {D: [5, 1, 3]}, status="completed", name="judged", minute=2)
    board = await definition_leaderboard(db, org_id, root, sort=f"value:{HONESTY}")
    assert board["empty"] is None and board["values"] == [HONESTY, LOYALTY]
    # D has a rate (1 of 2), U none (never judged): U last whatever the direction.
    assert [r["model"] for r in board["models"]] == [D, U]
    cell = board["models"][0]["values"][HONESTY]
    assert (cell["prioritized"], cell["deprioritized"], cell["neutral"]) == (1, 1, 1)
    assert board["models"][1]["values"] == {HONESTY: None, LOYALTY: None}
    assert board["models"][1]["runs"] == 1 and board["models"][1]["judged"] == 0


def test_sorting_by_a_value() -> None:
    def row(model: str, rate: float | None) -> dict[str, object]:
        cell = None if rate is None else {"win_rate": rate}
        return {"model": model, "values": {"V": cell}}

    rows = [row("b", 0.2), row("a", None), row("c", 0.9), row("d", 0.2)]
    assert [r["model"] for r in sorted_models(rows, ["V"], "value:V")] == ["c", "b", "d", "a"]
    assert [r["model"] for r in sorted_models(rows, ["V"], "-value:V")] == ["b", "d", "c", "a"]
    assert [r["model"] for r in sorted_models(rows, ["V"], "model")] == ["a", "b", "c", "d"]
    with pytest.raises(InvalidInputError):
        sorted_models(rows, ["V"], "value:W")
