"""The routes the CLI asks against a server (issue 33 §3), on a live server, both backends:
`POST /api/runs/{id}/analysis` (the analysis computed now, as `valuerank analyze`),
`POST /api/comparisons` (a comparison now, as `valuerank compare`), `GET
/api/runs/{id}/report` (the HTML report) and `GET /api/assumptions/jobs` (the state of a
validation request's jobs). Another organisation's ids are 404, like unknown ones."""

from __future__ import annotations

import json
from typing import Any

from valuerank.db import Database

from .test_analysis_routes import DECISIONS, MODELS, _foreign_run


async def test_analysis_and_comparison_now(
    live: Any, db: Database, org_id: str, make_run: Any, assert_error: Any
) -> None:
    run = await make_run(org_id, models=MODELS, decisions=DECISIONS)
    other = await make_run(org_id, models=MODELS[:2], decisions=DECISIONS)
    foreign = await _foreign_run(db, make_run)
    async with live.client() as client:
        first = await client.post(f"/api/runs/{run.id}/analysis", json={})
        assert first.status_code == 200, first.text
        data = first.json()["data"]
        assert (data["cached"], data["deep_cached"]) == (False, None)
        assert "current_deep" not in data and "narrative" not in data
        assert data["analysis"]["meta"]["runId"] == run.id
        deep = await client.post(
            f"/api/runs/{run.id}/analysis", json={"deep": True, "current_deep": True}
        )
        deep_data = deep.json()["data"]
        assert (deep_data["cached"], deep_data["deep_cached"]) == (True, False)
        assert deep_data["analysis"]["deep"]["pca"] == deep_data["current_deep"]["pca"]
        # The GET read serves the deep analysis computed here from the cache.
        read = await client.get(f"/api/runs/{run.id}/analysis", params={"deep": "true"})
        assert read.status_code == 200 and read.json()["data"]["meta"]["deepCached"] is True
        unknown = await client.post(
            f"/api/runs/{run.id}/analysis", json={"narrative_model": "openai:no-such-model"}
        )
        assert_error(unknown, 422, "UNKNOWN_MODEL")
        assert_error(
            await client.post(f"/api/runs/{foreign.id}/analysis", json={}), 404, "NOT_FOUND"
        )

        body = {"baseline_run_id": run.id, "comparison_run_id": other.id}
        compared = await client.post("/api/comparisons", json=body)
        assert compared.status_code == 200, compared.text
        assert compared.json()["data"]["cached"] is False
        comparison = compared.json()["data"]["comparison"]
        assert comparison["status"] == "completed" and comparison["result"]["models"]["shared"]
        again = (await client.post("/api/comparisons", json=body)).json()["data"]
        assert again["cached"] is True and again["comparison"]["id"] == comparison["id"]
        bad = await client.post("/api/comparisons", json={**body, "correction": "x"})
        assert_error(bad, 422, "INVALID_INPUT")
        foreign_body = {**body, "comparison_run_id": foreign.id}
        assert_error(await client.post("/api/comparisons", json=foreign_body), 404, "NOT_FOUND")


async def test_the_report_of_a_run(
    live: Any, db: Database, org_id: str, make_run: Any, assert_error: Any
) -> None:
    run = await make_run(org_id, models=MODELS, decisions=DECISIONS)
    other = await make_run(org_id, models=MODELS[:2], decisions=DECISIONS)
    foreign = await _foreign_run(db, make_run)
    async with live.client() as client:
        answer = await client.get(f"/api/runs/{run.id}/report")
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"].startswith("text/html")
        assert answer.headers["x-valuerank-run-id"] == run.id
        assert "x-valuerank-baseline-run-id" not in answer.headers
        figures = json.loads(answer.headers["x-valuerank-figures"])
        assert figures and all(size > 0 for size in figures.values())
        assert f'filename="report-{run.id[-8:]}.html"' in answer.headers["content-disposition"]
        assert "<html" in answer.text and "<script" not in answer.text
        with_baseline = await client.get(
            f"/api/runs/{run.id}/report", params={"baseline": other.id}
        )
        assert with_baseline.headers["x-valuerank-baseline-run-id"] == other.id
        assert 'id="comparison-section"' in with_baseline.text
        assert_error(await client.get(f"/api/runs/{foreign.id}/report"), 404, "NOT_FOUND")


async def test_the_jobs_of_a_validation_request(
    live: Any, db: Database, org_id: str, assert_error: Any
) -> None:
    async with live.client() as client:
        task = (await client.post("/api/assumptions/tasks", json={"name": "T"})).json()["data"]
        tags = f"/api/assumptions/tasks/{task['id']}/tags"
        await client.post(tags, json={"text": "#X: y", "id": "ra_x"})
        asked = await client.post(
            f"{tags}/ra_x/validate", json={"models": ["scripted:utilitarian"]}
        )
        [job] = asked.json()["data"]["jobs"]
        jobs = await client.get("/api/assumptions/jobs", params={"id": job["job_id"]})
        assert jobs.status_code == 200, jobs.text
        assert jobs.json()["data"]["jobs"] == {
            job["job_id"]: {"model": "scripted:utilitarian", "status": "queued", "error": None}
        }
        assert (await client.get("/api/assumptions/jobs")).json()["data"]["jobs"] == {}
        unknown = await client.get("/api/assumptions/jobs", params={"id": "nope"})
        assert_error(unknown, 404, "NOT_FOUND")
