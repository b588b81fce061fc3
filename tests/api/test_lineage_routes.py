"""Lineage results and the leaderboard of a definition on a live server, both backends: runs
chosen with `?run=` and versions left out with `?exclude=`, the whole tree from a fork, why a
table is empty; the leaderboard's pooled counts against the hand count and against each run's
own analysis, sorted by a value; wrong choices 422, another organisation's ids 404."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from tests.lineage_seeding import COMPLETED, HONESTY, LOYALTY, C, D, U, seed_tree, verdict

from valuerank.db import Database
from valuerank.orgs import ensure_org

from .conftest import Live

AssertError = Callable[[httpx.Response, int, str], dict[str, Any]]


def hand_count(model: str, value: str) -> tuple[int, int, int, int]:
    """(prioritised, deprioritised, neutral, judged) of the model's answers over the
    completed runs (a refusal is not judged)."""
    p = d = judged = 0
    for codes in COMPLETED:
        for code in codes.get(model, []):
            if code is None:
                continue
            judged += 1
            up, down = verdict(code)
            p += value in up
            d += value in down
    return p, d, judged - p - d, judged


async def test_lineage_results_with_chosen_runs(
    live: Live, db: Database, org_id: str, assert_error: AssertError
) -> None:
    tree = await seed_tree(db, org_id)
    async with db.transaction() as conn:
        other = await ensure_org(conn, "other")
    theirs = await seed_tree(db, other)
    url = f"/api/definitions/{tree.child}/lineage/results"
    async with live.client() as client:
        default = (await client.get(url)).json()["data"]
        assert [v["label"] for v in default["versions"]] == ["v1", "v1.1", "v1.1.1", "v1.2"]
        chosen = {v["label"]: v["representative_run_id"] for v in default["versions"]}
        assert chosen == {
            "v1": tree.root_latest,
            "v1.1": None,
            "v1.1.1": tree.grandchild_run,
            "v1.2": None,
        }
        assert default["models"]["compared"] == [D, U]
        assert [d["model"] for d in default["models"]["dropped"]] == [C]

        picked = await client.get(
            url, params=[("run", tree.root_old[-8:]), ("run", tree.sibling_running)]
        )
        assert picked.status_code == 200, picked.text
        data = picked.json()["data"]
        assert [c["to_label"] for c in data["changes"]] == ["v1.1.1", "v1.2"]
        assert {v["label"]: v["chosen_by"] for v in data["versions"]}["v1"] == "explicit"

        left_out = (
            await client.get(url, params=[("exclude", tree.grandchild), ("exclude", tree.sibling)])
        ).json()["data"]
        assert left_out["changes"] == [] and "Only v1 has a run" in left_out["empty"]["changes"]

        both = await client.get(url, params=[("run", tree.root_old), ("run", tree.root_latest)])
        assert "one run per version" in assert_error(both, 422, "INVALID_INPUT")["hint"]
        foreign_run = await client.get(url, params={"run": theirs.root_latest})
        assert_error(foreign_run, 404, "NOT_FOUND")
        foreign_version = await client.get(url, params={"exclude": theirs.grandchild})
        assert_error(foreign_version, 404, "DEFINITION_NOT_FOUND")
        outside = await client.get(
            f"/api/definitions/{theirs.root}/lineage/results", params={"run": tree.root_old}
        )
        assert_error(outside, 404, "DEFINITION_NOT_FOUND")


async def test_the_leaderboard_pools_every_completed_run(
    live: Live, db: Database, org_id: str, assert_error: AssertError
) -> None:
    tree = await seed_tree(db, org_id)
    async with live.client() as client:
        answer = await client.get(f"/api/definitions/{tree.grandchild}/leaderboard")
        assert answer.status_code == 200, answer.text
        board = answer.json()["data"]
        assert board["root_id"] == tree.root and board["empty"] is None
        # The failed run and the running one are not pooled.
        assert [r["id"] for r in board["runs"]] == [
            tree.root_old,
            tree.root_latest,
            tree.grandchild_run,
        ]
        assert board["values"] == [HONESTY, LOYALTY]
        assert [row["model"] for row in board["models"]] == [C, D, U]
        analyses = [
            (await client.get(f"/api/runs/{r['id']}/analysis")).json()["data"]["perModel"]
            for r in board["runs"]
        ]
        for row in board["models"]:
            model = row["model"]
            assert row["runs"] == sum(model in codes for codes in COMPLETED)
            for value in (HONESTY, LOYALTY):
                cell = row["values"][value]
                p, d, neutral, judged = hand_count(model, value)
                assert (cell["prioritized"], cell["deprioritized"]) == (p, d)
                assert (cell["neutral"], cell["transcripts"]) == (neutral, judged)
                assert cell["win_rate"] == p / (p + d)
                assert cell["lower"] < cell["win_rate"] < cell["upper"]
                # The same counts as the runs' own analyses, added.
                counts = [a[model]["values"][value]["count"] for a in analyses if model in a]
                assert p == sum(c["prioritized"] for c in counts)
                assert d == sum(c["deprioritized"] for c in counts)
                assert cell["runs"] == len(counts)

        ranked = (
            await client.get(
                f"/api/definitions/{tree.root}/leaderboard", params={"sort": f"value:{HONESTY}"}
            )
        ).json()["data"]
        rates = [row["values"][HONESTY]["win_rate"] for row in ranked["models"]]
        assert rates == sorted(rates, reverse=True) and ranked["sort"] == f"value:{HONESTY}"
        lowest = (
            await client.get(
                f"/api/definitions/{tree.root}/leaderboard", params={"sort": f"-value:{HONESTY}"}
            )
        ).json()["data"]
        assert [r["model"] for r in lowest["models"]] == [r["model"] for r in ranked["models"]][
            ::-1
        ]
        wrong = await client.get(
            f"/api/definitions/{tree.root}/leaderboard", params={"sort": "value:Courage"}
        )
        assert "value:Honesty" in assert_error(wrong, 422, "INVALID_INPUT")["hint"]

        async with db.transaction() as conn:
            other = await ensure_org(conn, "other")
        theirs = await seed_tree(db, other)
        assert_error(
            await client.get(f"/api/definitions/{theirs.root}/leaderboard"),
            404,
            "DEFINITION_NOT_FOUND",
        )
        missing = await client.get("/api/definitions/nope/leaderboard")
        assert_error(missing, 404, "DEFINITION_NOT_FOUND")
