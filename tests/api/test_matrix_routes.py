"""/api/runs/{id}/matrix and /api/runs/{id}/scenarios/{scenario_id}/answers on SQLite and
PostgreSQL, against a judged run whose decisions are known (tests/matrix_seeding.py): the
cells' counts and means, each row's range, split and odd one out, sorting and filters, the
judges' basis, two runs side by side; another organisation's runs are 404."""

from __future__ import annotations

from typing import Any

import pytest
from tests.matrix_seeding import CODES, JUDGES, MODELS, answer_text, judge_codes, seed_matrix_run

from valuerank.consensus import Judgement, decision_consensus
from valuerank.db import Database
from valuerank.orgs import ensure_org
from valuerank.runs.service import run_scenario_ids

U, D, C = MODELS


def agreed(code: int) -> int | None:
    """The consensus of the two judges' readings of an answer rated `code`."""
    return decision_consensus(
        Judgement(judge, reading, 80.0)
        for judge, reading in zip(JUDGES, judge_codes(code), strict=True)
    ).decision


async def _data(client: Any, url: str, **params: Any) -> dict[str, Any]:
    response = await client.get(url, params=params)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


async def test_the_matrix_has_every_scenario_and_model_with_known_numbers(
    live: Any, db: Database, org_id: str
) -> None:
    run = await seed_matrix_run(db, org_id)
    async with db.transaction() as conn:
        scenarios = await run_scenario_ids(conn, run.id)
    async with live.client_for("default", "viewer") as client:
        data = await _data(client, f"/api/runs/{run.id}/matrix", sort="scenario")
        assert [c["model"] for c in data["columns"]] == list(MODELS)
        assert data["runs"][0]["id"] == run.id and data["basis"] == "model"
        assert [r["scenario_id"] for r in data["rows"]] == scenarios
        assert data["scenarios"] == len(scenarios) and data["threshold"] == 1.0
        rows = {r["scenario_id"]: r for r in data["rows"]}
        for sid, per_model in zip(scenarios, CODES, strict=False):
            row = rows[sid]
            means = []
            for column, model in enumerate(MODELS):
                cell, codes = row["cells"][column], per_model[model]
                decided = [c for c in codes if c is not None]
                assert cell["n"] == len(codes) and cell["decided"] == len(decided)
                assert cell["undecided"] == len(codes) - len(decided)
                assert cell["mean"] == pytest.approx(sum(decided) / len(decided))
                assert cell["counts"] == {str(k): decided.count(k) for k in range(1, 6)}
                listed = await _data(
                    client, "/api/transcripts", run=run.id, model=model, scenario=sid
                )
                by_sample = sorted(listed["transcripts"], key=lambda t: t["sample_index"])
                assert cell["transcript_ids"] == [t["id"] for t in by_sample]
                means.append(cell["mean"])
            assert row["disagreement"] == pytest.approx(max(means) - min(means))
        for sid in scenarios[len(CODES) :]:  # not answered yet
            assert rows[sid]["disagreement"] is None
            assert all(c["n"] == 0 and c["mean"] is None for c in rows[sid]["cells"])
        first, close, same, fourth = (rows[s] for s in scenarios[:4])
        assert (first["split"], first["odd_one_out"], first["differ"]) == (True, 0, True)
        assert (fourth["split"], fourth["odd_one_out"], fourth["differ"]) == (True, 1, True)
        assert (close["differ"], close["split"], same["disagreement"]) == (False, False, 0)
        assert (data["differ"], data["split"]) == (2, 2)
        assert [c["odd"] for c in data["columns"]] == [1, 1, 0]
        assert [c["mean"] for c in data["columns"]] == pytest.approx([3.625, 2.0, 2.5])
        pair = next(p for p in data["pairs"] if (p["a"], p["b"]) == (0, 1))
        assert (pair["shared"], pair["differ"]) == (4, 2)
        assert pair["mean_gap"] == pytest.approx((3.5 + 0.5 + 0 + 3.5) / 4)
        harm = next(d for d in data["dimensions"] if d["name"] == "Harm")
        assert harm["value"] == "Physical safety" and harm["levels"]["3"] == "injury risk"
        assert data["scale"]["5"] == "report the defect to the regulator now"

        # Sorted by disagreement (the default), filtered, reversed, by a dimension.
        ordered = await _data(client, f"/api/runs/{run.id}/matrix")
        assert [r["scenario_id"] for r in ordered["rows"][:4]] == [
            scenarios[0],
            scenarios[3],
            scenarios[1],
            scenarios[2],
        ]
        differ = await _data(client, f"/api/runs/{run.id}/matrix", show="differ")
        assert [r["scenario_id"] for r in differ["rows"]] == [scenarios[0], scenarios[3]]
        strict = await _data(client, f"/api/runs/{run.id}/matrix", show="differ", threshold=3.75)
        assert [r["scenario_id"] for r in strict["rows"]] == [scenarios[0]]
        assert strict["differ"] == 1
        by_harm = await _data(client, f"/api/runs/{run.id}/matrix", sort="-dimension:Harm")
        harms = [r["levels"]["Harm"] for r in by_harm["rows"]]
        assert harms == sorted(harms, reverse=True)


async def test_the_judges_basis_counts_their_agreed_decisions(
    live: Any, db: Database, org_id: str
) -> None:
    run = await seed_matrix_run(db, org_id)
    async with db.transaction() as conn:
        first = (await run_scenario_ids(conn, run.id))[0]
    async with live.client_for("default", "viewer") as client:
        data = await _data(client, f"/api/runs/{run.id}/matrix", basis="judges", sort="scenario")
    assert data["basis"] == "judges"
    row = next(r for r in data["rows"] if r["scenario_id"] == first)
    for column, model in enumerate(MODELS):
        readings = [r for c in CODES[0][model] if c is not None and (r := agreed(c)) is not None]
        assert row["cells"][column]["mean"] == pytest.approx(sum(readings) / len(readings))


async def test_two_runs_side_by_side_in_the_matrix_and_the_answers(
    live: Any, db: Database, org_id: str, assert_error: Any
) -> None:
    run = await seed_matrix_run(db, org_id, name="baseline")
    later = await seed_matrix_run(db, org_id, name="later", codes=[{U: [1, 1]}], models=(U,))
    async with db.transaction() as conn:
        first = (await run_scenario_ids(conn, run.id))[0]
        other = await ensure_org(conn, "other")
    foreign = await seed_matrix_run(db, other, name="theirs")
    async with live.client_for("default", "viewer") as client:
        url = f"/api/runs/{run.id}/matrix"
        data = await _data(client, url, compare=[later.id, later.id, run.id], sort="scenario")
        assert [r["id"] for r in data["runs"]] == [run.id, later.id]
        assert [(c["run_id"], c["model"]) for c in data["columns"]] == [
            *((run.id, m) for m in MODELS),
            (later.id, U),
        ]
        row = next(r for r in data["rows"] if r["scenario_id"] == first)
        assert [c["mean"] for c in row["cells"]] == pytest.approx([5, 1.5, 1, 1])

        answers_url = f"/api/runs/{run.id}/scenarios/{first}/answers"
        both = await _data(client, answers_url, compare=later.id)
        assert [(c["run_id"], c["model"]) for c in both["columns"]] == [
            *((run.id, m) for m in MODELS),
            (later.id, U),
        ]
        assert both["columns"][3]["mean"] == 1

        assert_error(await client.get(url, params={"compare": foreign.id}), 404, "NOT_FOUND")
        assert_error(await client.get(f"/api/runs/{foreign.id}/matrix"), 404, "NOT_FOUND")
        assert_error(
            await client.get(answers_url, params={"compare": foreign.id}), 404, "NOT_FOUND"
        )
        assert_error(
            await client.get(f"/api/runs/{foreign.id}/scenarios/{first}/answers"),
            404,
            "NOT_FOUND",
        )
        assert_error(await client.get(url, params={"sort": "dimension:Nope"}), 422, "INVALID_INPUT")
        assert_error(await client.get(url, params={"sort": "colour"}), 422, "VALIDATION_ERROR")
        assert_error(await client.get(url, params={"threshold": 0}), 422, "VALIDATION_ERROR")
        too_many = {"compare": [later.id] * 5}
        assert_error(await client.get(url, params=too_many), 422, "VALIDATION_ERROR")
    async with live.client(token=None) as anonymous:
        assert (await anonymous.get(url)).status_code == 401


async def test_one_scenarios_answers_from_every_model_with_the_judges(
    live: Any, db: Database, org_id: str, assert_error: Any
) -> None:
    run = await seed_matrix_run(db, org_id)
    async with db.transaction() as conn:
        scenarios = await run_scenario_ids(conn, run.id)
    first, close, empty = scenarios[0], scenarios[1], scenarios[-1]
    async with live.client_for("default", "viewer") as client:
        data = await _data(client, f"/api/runs/{run.id}/scenarios/{first}/answers")
        assert data["scenario"]["id"] == first
        assert "[Tenure]" not in data["scenario"]["body"] and "engineer" in data["scenario"]["body"]
        assert set(data["scenario"]["levels"]) == {"Tenure", "Harm", "Cost"}
        assert [c["model"] for c in data["columns"]] == list(MODELS)
        for column in data["columns"]:
            codes = [c for c in CODES[0][column["model"]] if c is not None]
            assert len(codes) == 2  # every model decided both samples here
            assert [t["decision_code"] for t in column["transcripts"]] == codes
            assert [t["sample_index"] for t in column["transcripts"]] == [0, 1]
            assert column["mean"] == pytest.approx(sum(codes) / len(codes))
            for t, code in zip(column["transcripts"], codes, strict=True):
                assert t["turns"][0]["target"] == answer_text(column["model"], first, code)
                assert [j["judge_model"] for j in t["judgments"]] == sorted(JUDGES)
                readings = {j["judge_model"]: j["decision"] for j in t["judgments"]}
                assert readings == dict(zip(JUDGES, judge_codes(code), strict=True))
                assert t["consensus"]["decision"] == agreed(code)
                assert all(j["vote"] in ("validated", "partial") for j in t["judgments"])

        refused = await _data(client, f"/api/runs/{run.id}/scenarios/{close}/answers")
        contrarian = refused["columns"][2]["transcripts"]
        assert [t["decision_code"] for t in contrarian] == [3, None]
        assert contrarian[1]["decision_reason"] == "refusal" and contrarian[1]["judgments"] == []

        unanswered = await _data(client, f"/api/runs/{run.id}/scenarios/{empty}/answers")
        assert [c["transcripts"] for c in unanswered["columns"]] == [[], [], []]
        assert all(c["mean"] is None for c in unanswered["columns"])

        assert_error(
            await client.get(f"/api/runs/{run.id}/scenarios/nope/answers"),
            404,
            "SCENARIO_NOT_FOUND",
        )
