"""Analysis, comparison, experiment and lineage routes on a live server, both backends; the
queued jobs are run by a real in-process worker; another organisation's ids are 404."""

from __future__ import annotations

import json
from typing import Any

import pytest

from valuerank.db import Database
from valuerank.errors import NotFoundError
from valuerank.orgs import ensure_org
from valuerank.pipeline.calls import ProviderPool
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.handlers import register_pipeline_handlers
from valuerank.queue import QueueSettings, Worker
from valuerank.refs import short_id

FAST = QueueSettings(poll_seconds=0.02, heartbeat_seconds=0.05, retry_base_seconds=0.0)
MODELS = ("scripted:utilitarian", "scripted:contrarian", "scripted:deontologist")
DECISIONS: dict[str, list[int | None]] = {
    "scripted:utilitarian": [1, 2, 4, 5, 3, 2],
    "scripted:contrarian": [5, 4, 2, 1, 3, 4],
    "scripted:deontologist": [3, None, 3, 4, 2, 3],
}


async def _work(db: Database) -> None:
    """Run every queued job, then stop (a real worker in burst mode)."""
    worker = Worker(db, settings=FAST, concurrency=2)
    ctx = PipelineContext(db, providers=ProviderPool(environ={}))
    register_pipeline_handlers(worker, ctx)
    try:
        await worker.run_until_idle()
    finally:
        await ctx.aclose()


async def _foreign_run(db: Database, make_run: Any) -> Any:
    async with db.transaction() as conn:
        other = await ensure_org(conn, "other")
    return await make_run(other, models=MODELS, decisions=DECISIONS)


async def test_analysis_basic_cached_and_deep_queued(
    live: Any, db: Database, org_id: str, make_run: Any, assert_error: Any
) -> None:
    run = await make_run(org_id, models=MODELS, decisions=DECISIONS)
    foreign = await _foreign_run(db, make_run)
    async with live.client() as client:
        first = await client.get(f"/api/runs/{run.id}/analysis")
        assert first.status_code == 200, first.text
        body = first.json()
        assert body["cached"] is False
        analysis = body["data"]
        assert analysis["perModel"]["scripted:deontologist"]["refusalRate"] == round(1 / 6, 6)
        assert analysis["meta"]["runId"] == run.id
        assert "scripted:contrarian:scripted:utilitarian" in analysis["modelAgreement"]["pairwise"]
        json.dumps(analysis, allow_nan=False)
        again = (await client.get(f"/api/runs/{short_id(run.id)}/analysis")).json()
        assert again["cached"] is True and again["data"]["computedAt"] == analysis["computedAt"]

        queued = await client.get(f"/api/runs/{run.id}/analysis", params={"deep": "true"})
        assert queued.status_code == 202
        deep_job = queued.json()["data"]["deep"]
        assert deep_job["status"] == "queued" and deep_job["job_id"]
        assert queued.json()["data"]["meta"]["deepCached"] is False
        repeat = await client.get(f"/api/runs/{run.id}/analysis", params={"deep": "true"})
        assert repeat.json()["data"]["deep"]["job_id"] == deep_job["job_id"]  # not twice
        await _work(db)
        ready = await client.get(f"/api/runs/{run.id}/analysis", params={"deep": "true"})
        assert ready.status_code == 200
        deep = ready.json()["data"]["deep"]
        assert deep["pca"]["available"] and deep["insights"]
        assert ready.json()["data"]["meta"]["deepCached"] is True
        assert (
            "deepCached"
            not in (await client.get(f"/api/runs/{run.id}/analysis")).json()["data"]["meta"]
        )

        unknown = await client.post(
            f"/api/runs/{run.id}/analyze", json={"narrative_model": "openai:no-such-model"}
        )
        assert "no-such-model" in assert_error(unknown, 422, "UNKNOWN_MODEL")["error"]
        narrated = await client.post(
            f"/api/runs/{run.id}/analyze", json={"narrative_model": "scripted:centrist"}
        )
        assert narrated.status_code == 202 and narrated.json()["data"]["kind"] == "deep"
        await _work(db)  # the deep analysis is cached: the narrative is still written
        told = (await client.get(f"/api/runs/{run.id}/analysis", params={"deep": "true"})).json()
        assert "scripted:centrist" in told["data"]["deep"]["narrative"]

        forced = await client.post(f"/api/runs/{run.id}/analyze", json={"force": True})
        assert forced.status_code == 202
        assert forced.json()["data"]["kind"] == "basic"
        await _work(db)
        recomputed = (await client.get(f"/api/runs/{run.id}/analysis")).json()
        assert recomputed["cached"] is True
        assert recomputed["data"]["computedAt"] != analysis["computedAt"]
        assert (await client.post(f"/api/runs/{run.id}/analyze")).status_code == 202

        bad = await client.post(f"/api/runs/{run.id}/analyze", json={"force": True, "x": 1})
        assert_error(bad, 422, "VALIDATION_ERROR")
        for ref in ("no-such-run", foreign.id):
            assert_error(await client.get(f"/api/runs/{ref}/analysis"), 404, "NOT_FOUND")
            assert_error(await client.post(f"/api/runs/{ref}/analyze"), 404, "NOT_FOUND")


async def test_comparisons_are_queued_computed_listed_and_scoped(
    live: Any, db: Database, org_id: str, make_run: Any, assert_error: Any
) -> None:
    a = await make_run(org_id, models=MODELS, decisions=DECISIONS)
    shifted = {m: [None if d is None else min(5, d + 1) for d in ds] for m, ds in DECISIONS.items()}
    b = await make_run(org_id, models=MODELS, decisions=shifted)
    foreign = await _foreign_run(db, make_run)
    async with live.client() as client:
        made = await client.post(
            "/api/runs/compare", json={"baseline_run_id": a.id, "comparison_run_id": b.id}
        )
        assert made.status_code == 202, made.text
        comparison_id = made.json()["data"]["comparison_id"]
        pending = (await client.get(f"/api/comparisons/{comparison_id}")).json()["data"]
        assert pending["status"] == "queued" and pending["result"] is None
        second = await client.post(
            "/api/runs/compare",
            json={"baseline_run_id": b.id, "comparison_run_id": a.id, "correction": "holm"},
        )
        assert second.status_code == 202
        await _work(db)
        done = (await client.get(f"/api/comparisons/{comparison_id}")).json()["data"]
        assert done["status"] == "completed"
        result = done["result"]
        assert result["baselineRunId"] == a.id and result["comparisonRunId"] == b.id
        assert result["models"]["shared"] == sorted(MODELS)
        assert result["perModel"]["scripted:utilitarian"]["delta"] > 0
        assert result["methodsUsed"]["correction"] == "fdr_bh"

        listed = (await client.get(f"/api/runs/{a.id}/comparisons")).json()["data"]
        assert listed["count"] == 2 and listed["next_cursor"] is None
        assert "result" not in listed["comparisons"][0]
        first = (await client.get(f"/api/runs/{a.id}/comparisons", params={"limit": 1})).json()
        page_two = await client.get(
            f"/api/runs/{a.id}/comparisons",
            params={"limit": 1, "cursor": first["data"]["next_cursor"]},
        )
        ids = [
            first["data"]["comparisons"][0]["id"],
            page_two.json()["data"]["comparisons"][0]["id"],
        ]
        assert sorted(ids) == sorted(c["id"] for c in listed["comparisons"])
        bad_cursor = await client.get(f"/api/runs/{a.id}/comparisons", params={"cursor": "!!"})
        assert_error(bad_cursor, 400, "INVALID_CURSOR")

        same = await client.post(
            "/api/runs/compare", json={"baseline_run_id": a.id, "comparison_run_id": a.id}
        )
        assert_error(same, 422, "INVALID_INPUT")
        wrong = await client.post(
            "/api/runs/compare",
            json={"baseline_run_id": a.id, "comparison_run_id": b.id, "correction": "none"},
        )
        assert_error(wrong, 422, "VALIDATION_ERROR")  # the schema's enum (issue 21)
        across = await client.post(
            "/api/runs/compare", json={"baseline_run_id": a.id, "comparison_run_id": foreign.id}
        )
        assert_error(across, 404, "NOT_FOUND")
        assert_error(await client.get("/api/comparisons/nope"), 404, "NOT_FOUND")
        assert_error(await client.get(f"/api/runs/{foreign.id}/comparisons"), 404, "NOT_FOUND")


async def test_experiments_and_lineage_results(
    live: Any, db: Database, org_id: str, make_run: Any, assert_error: Any
) -> None:
    baseline = await make_run(org_id, models=MODELS[:2], decisions=DECISIONS)
    foreign = await _foreign_run(db, make_run)
    async with live.client() as client:
        created = await client.post(
            "/api/experiments",
            json={"name": "more models", "hypothesis": "h", "baseline_run_id": baseline.id},
        )
        assert created.status_code == 201, created.text
        experiment = created.json()["data"]
        variant = await client.post(
            f"/api/experiments/{experiment['id']}/runs",
            json={"changes": {"models": ["scripted:centrist"], "temperature": 0.7}},
        )
        assert variant.status_code == 201, variant.text
        run = variant.json()["data"]
        assert run["models"] == ["scripted:centrist"] and run["status"] == "running"
        assert run["experiment_id"] == experiment["id"]
        report = (await client.get(f"/api/experiments/{experiment['id']}")).json()["data"]
        [entry] = report["variants"]
        assert entry["changes"] == {"models": ["scripted:centrist"], "temperature": 0.7}
        assert entry["comparison"] is None and baseline.id in entry["waiting_for"]
        listed = (await client.get("/api/experiments")).json()["data"]
        assert [e["id"] for e in listed["experiments"]] == [experiment["id"]]

        unknown = await client.post(
            f"/api/experiments/{experiment['id']}/runs", json={"changes": {"colour": "red"}}
        )
        assert "changeable" in assert_error(unknown, 422, "INVALID_INPUT")["hint"]
        empty = await client.post(f"/api/experiments/{experiment['id']}/runs", json={"changes": {}})
        assert_error(empty, 422, "INVALID_INPUT")
        bad = await client.post(
            f"/api/experiments/{experiment['id']}/runs", json={"changes": {"temperature": 9}}
        )
        assert_error(bad, 422, "INVALID_INPUT")
        missing_name = await client.post("/api/experiments", json={"baseline_run_id": baseline.id})
        assert_error(missing_name, 422, "VALIDATION_ERROR")
        other = await client.post(
            "/api/experiments", json={"name": "x", "baseline_run_id": foreign.id}
        )
        assert_error(other, 404, "NOT_FOUND")
        assert_error(await client.get("/api/experiments/nope"), 404, "NOT_FOUND")

        lineage = await client.get(f"/api/definitions/{baseline.definition_id}/lineage/results")
        assert lineage.status_code == 200
        versions = lineage.json()["data"]["versions"]
        assert [v["label"] for v in versions] == ["v1"]
        assert {r["id"] for r in versions[0]["runs"]} >= {baseline.id, run["id"]}
        missing = await client.get("/api/definitions/nope/lineage/results")
        assert_error(missing, 404, "DEFINITION_NOT_FOUND")
        assert_error(
            await client.get(f"/api/definitions/{foreign.definition_id}/lineage/results"),
            404,
            "DEFINITION_NOT_FOUND",
        )


async def test_deleting_a_run_takes_its_queued_analysis_with_it(
    live: Any, db: Database, org_id: str, make_run: Any
) -> None:
    from valuerank.queue import get_job
    from valuerank.runs.service import delete_run

    run = await make_run(org_id, models=MODELS, decisions=DECISIONS)
    async with live.client() as client:
        queued = (await client.post(f"/api/runs/{run.id}/analyze")).json()["data"]
    async with db.transaction() as conn:
        await delete_run(conn, org_id, run.id)
    # The run's analyses' partition went with it: no job is left to run for a deleted run.
    async with db.transaction() as conn:
        with pytest.raises(NotFoundError):
            await get_job(conn, queued["job_id"])


def test_reads_need_the_viewer_role_and_writes_the_member_role() -> None:
    # The server's own token is an admin, so no live request can show a 403 yet: check the
    # role each route declares instead (deps.require gives the 403).
    from typing import get_args

    from fastapi.routing import APIRoute

    from valuerank.api.deps import Member, Viewer
    from valuerank.api.routes_analysis import router

    viewer = get_args(Viewer)[1].dependency
    member = get_args(Member)[1].dependency
    seen = {}
    for route in router.routes:
        assert isinstance(route, APIRoute)
        calls = {d.call for d in route.dependant.dependencies}
        assert route.methods is not None
        (method,) = route.methods
        seen[(method, route.path)] = (
            member if member in calls else viewer if viewer in calls else None
        )
    assert len(seen) == 12  # with the two that compute now: POST …/analysis, /comparisons
    for (method, path), role in seen.items():
        assert role is (member if method == "POST" else viewer), (method, path)


async def test_analysis_debug_shows_the_reads_timings(
    live: Any, org_id: str, make_run: Any
) -> None:
    """`?debug=true` as on the consensus reads: where the time went, and what was computed."""
    run = await make_run(org_id, models=MODELS, decisions=DECISIONS)
    async with live.client() as client:
        plain = (await client.get(f"/api/runs/{run.id}/analysis")).json()
        assert "debug" not in plain  # computed (and stored) by this first read
        cached = await client.get(f"/api/runs/{run.id}/analysis", params={"debug": "true"})
        deep = await client.get(
            f"/api/runs/{run.id}/analysis", params={"debug": "true", "deep": "true"}
        )
    assert cached.status_code == 200 and cached.json()["cached"] is True
    timings = cached.json()["debug"]
    assert timings["cache_hit"] is True and timings["computed"] == []
    assert timings["query_time_ms"] > 0 and timings["analysis_time_ms"] == 0
    assert deep.status_code == 202  # the deep analysis was queued; the timings still come
    assert deep.json()["debug"]["query_time_ms"] > 0 and deep.json()["debug"]["computed"] == []


async def test_analysis_bodies_coerce_nothing(
    live: Any, org_id: str, make_run: Any, assert_error: Any
) -> None:
    """Strict like every other body: neither `"true"` nor 1 is a boolean."""
    run = await make_run(org_id, models=MODELS, decisions=DECISIONS)
    async with live.client() as client:
        for body in ({"deep": "true"}, {"force": 1}):
            response = await client.post(f"/api/runs/{run.id}/analyze", json=body)
            assert_error(response, 422, "VALIDATION_ERROR")
