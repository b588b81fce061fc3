"""/api/assumptions on SQLite and PostgreSQL: the seed's multi-model view and task consensus
(its example, computed), no_data, every error code, the cache and `?debug=true`, feeding
tasks, tags and validations, and authentication by default."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import text
from tests.waiting import wait_until_async

from valuerank.db import Database
from valuerank.orgs import ensure_org
from valuerank.registry import upsert_model
from valuerank.validation.store import NewValidation, add_tag, create_task, record_validation

JWT = "#COMPLETION_DRIVE_IMPL: Using JWT tokens for stateless authentication"
RATE = "#SUGGEST_ERROR_HANDLING: Add rate limiting for login attempts"
CLAUDE, GPT, GEMINI = "anthropic:claude-sonnet-3.5", "openai:gpt-4-turbo", "google:gemini-pro-1.0"


async def _json(client: httpx.AsyncClient, url: str) -> Any:
    return (await client.get(url)).json()


async def _seed_models(db: Database) -> None:
    """The seed document's three models, with its weights (Gemini 0.9)."""
    async with db.transaction() as conn:
        for model_id, name, version, weight in (
            (CLAUDE, "Claude Sonnet 3.5", "3.5", 1.0),
            (GPT, "GPT-4 Turbo", "turbo", 1.0),
            (GEMINI, "Gemini Pro", "1.0", 0.9),
        ):
            await upsert_model(
                conn,
                model_id,
                display_name=name,
                version=version,
                category="large_language_model",
                weight=weight,
            )


async def _task(client: httpx.AsyncClient, name: str = "Implement user authentication API") -> int:
    response = await client.post("/api/assumptions/tasks", json={"name": name})
    assert response.status_code == 201, response.text
    task_id: int = response.json()["data"]["id"]
    return task_id


async def _tag(client: httpx.AsyncClient, task_id: int, tag_id: str, body: str) -> None:
    response = await client.post(
        f"/api/assumptions/tasks/{task_id}/tags", json={"id": tag_id, "text": body}
    )
    assert response.status_code == 201, response.text


async def _validate(
    client: httpx.AsyncClient,
    task_id: int,
    tag_id: str,
    validator: str,
    outcome: str,
    confidence: float,
    notes: str = "",
) -> dict[str, Any]:
    response = await client.post(
        f"/api/assumptions/tasks/{task_id}/tags/{tag_id}/validations",
        json={
            "validator_id": validator,
            "outcome": outcome,
            "confidence": confidence,
            "notes": notes,
        },
    )
    assert response.status_code == 201, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


async def test_the_seed_example_view_and_task_consensus(live: Any, db: Database) -> None:
    await _seed_models(db)
    async with live.client() as client:
        task_id = await _task(client)
        await _tag(client, task_id, "ra_tag_abc123", JWT)
        await _tag(client, task_id, "ra_tag_def456", RATE)
        await _tag(client, task_id, "ra_tag_split", "#COMPLETION_DRIVE_IMPL: Sessions in Redis")
        await _tag(client, task_id, "ra_tag_wrong", "#COMPLETION_DRIVE_IMPL: Passwords in MD5")
        await _tag(client, task_id, "ra_tag_empty", "#SUGGEST_DOCS: Document the token lifetime")
        notes = "Implementation assumption appears valid based on code analysis"
        first = await _validate(client, task_id, "ra_tag_abc123", CLAUDE, "validated", 88, notes)
        assert first["consensus"]["total_validations"] == 1
        await _validate(client, task_id, "ra_tag_abc123", GPT, "validated", 92)
        await _validate(client, task_id, "ra_tag_abc123", GEMINI, "partial", 75)
        await _validate(client, task_id, "ra_tag_def456", CLAUDE, "validated", 95)
        await _validate(client, task_id, "ra_tag_def456", GPT, "validated", 90)
        await _validate(client, task_id, "ra_tag_split", CLAUDE, "validated", 90)
        await _validate(client, task_id, "ra_tag_split", GPT, "rejected", 80)
        await _validate(client, task_id, "ra_tag_wrong", CLAUDE, "rejected", 90)
        await _validate(client, task_id, "ra_tag_wrong", GPT, "rejected", 85)

        body = (await client.get(f"/api/assumptions/multi-model/{task_id}/ra_tag_abc123")).json()
        assert body["success"] is True and body["cached"] is False
        view = body["data"]
        # Σ w·c·o / Σ w·c with the seed's weights: the seed prints 0.847; the formula gives
        # (0.88 + 0.92 + 0.9·0.75·0.5) / (0.88 + 0.92 + 0.9·0.75) = 2.1375 / 2.475 = 0.8636…
        expected = (0.88 + 0.92 + 0.9 * 0.75 * 0.5) / (0.88 + 0.92 + 0.9 * 0.75)
        assert view["consensus"] == {
            "consensus": round(expected, 3),
            "outcome": "validated",
            "agreement_level": "STRONG",
            "model_disagreement": False,
            "total_validations": 3,
            "disagreement_reasons": [],
            "confidence_spread": 17.0,
        }
        assert view["consensus"]["consensus"] == 0.864
        assert view["model_count"] == 3
        assert view["task_name"] == "Implement user authentication API"
        assert view["ra_tag_text"] == JWT
        assert view["cached"] is False and view["generated_at"]
        claude, gpt, gemini = view["validations"]
        assert claude["validator_id"] == CLAUDE and claude["task_id"] == task_id
        assert claude["ra_tag_id"] == "ra_tag_abc123" and claude["notes"] == notes
        assert (claude["outcome"], claude["confidence"]) == ("validated", 88)
        assert (claude["model_name"], claude["model_version"]) == ("Claude Sonnet 3.5", "3.5")
        assert claude["model_category"] == "large_language_model"
        assert claude["validated_at"] and claude["source"] == "api"
        assert gpt["model_name"] == "GPT-4 Turbo" and gpt["confidence"] == 92
        assert (gemini["outcome"], gemini["model_weight"]) == ("partial", 0.9)
        assert claude["id"] < gpt["id"] < gemini["id"]

        summary = (await client.get(f"/api/assumptions/consensus/{task_id}")).json()["data"]
        assert summary["task_id"] == task_id
        assert summary["task_name"] == "Implement user authentication API"
        # Every vote of every tag pooled: abc123 (2.1375 / 2.475), def456 (1.85 / 1.85),
        # split (0.9 / 1.7), wrong (0 / 1.75).
        pooled = (2.1375 + 1.85 + 0.9 + 0.0) / (2.475 + 1.85 + 1.7 + 1.75)
        assert summary["overall_consensus"] == {
            "consensus": round(pooled, 3),
            "agreement_level": "MODERATE",
            "total_tags": 5,
            "total_validations": 9,
            "tags_with_validations": 4,
        }
        by_tag = {t["ra_tag_id"]: t for t in summary["ra_tag_summaries"]}
        assert list(by_tag) == [
            "ra_tag_abc123",
            "ra_tag_def456",
            "ra_tag_split",
            "ra_tag_wrong",
            "ra_tag_empty",
        ]
        assert by_tag["ra_tag_abc123"]["consensus"] == view["consensus"]
        assert by_tag["ra_tag_abc123"]["ra_tag_text"] == JWT
        # Highest weight × confidence first: GPT 0.92, Claude 0.88, Gemini 0.675.
        assert by_tag["ra_tag_abc123"]["top_models"] == [GPT, CLAUDE, GEMINI]
        assert by_tag["ra_tag_def456"]["consensus"]["consensus"] == 1.0
        assert by_tag["ra_tag_split"]["consensus"]["disagreement_reasons"] == [
            "low_consensus",
            "conflicting_outcomes",
        ]
        wrong = by_tag["ra_tag_wrong"]["consensus"]
        assert (wrong["consensus"], wrong["outcome"], wrong["model_disagreement"]) == (
            0.0,
            "rejected",
            True,
        )
        assert by_tag["ra_tag_empty"]["consensus"]["agreement_level"] == "no_data"
        assert by_tag["ra_tag_empty"]["top_models"] == []
        # The models disagree on `split`; on `wrong` they agree it is wrong: not contentious.
        assert summary["contentious_tags"] == ["ra_tag_split"]
        assert summary["high_confidence_tags"] == ["ra_tag_def456"]


async def test_no_data_before_any_validation(live: Any) -> None:
    async with live.client() as client:
        task_id = await _task(client, "Empty")
        empty = (await client.get(f"/api/assumptions/consensus/{task_id}")).json()["data"]
        assert empty["overall_consensus"] == {
            "consensus": 0.0,
            "agreement_level": "no_data",
            "total_tags": 0,
            "total_validations": 0,
            "tags_with_validations": 0,
        }
        assert empty["ra_tag_summaries"] == [] and empty["contentious_tags"] == []
        await _tag(client, task_id, "ra_1", JWT)
        view = (await client.get(f"/api/assumptions/multi-model/{task_id}/ra_1")).json()["data"]
        assert view["consensus"]["consensus"] == 0.0
        assert view["consensus"]["agreement_level"] == "no_data"
        assert view["consensus"]["model_disagreement"] is False
        assert view["consensus"]["outcome"] is None
        assert view["model_count"] == 0 and view["validations"] == []


async def test_a_models_latest_validation_counts_and_history_is_kept(
    live: Any, db: Database
) -> None:
    await _seed_models(db)
    async with live.client() as client:
        task_id = await _task(client)
        await _tag(client, task_id, "ra_1", JWT)
        await _validate(client, task_id, "ra_1", CLAUDE, "rejected", 60)
        again = await _validate(client, task_id, "ra_1", CLAUDE, "validated", 90)
        assert again["consensus"]["total_validations"] == 1
        assert again["consensus"]["consensus"] == 1.0
        view = (await client.get(f"/api/assumptions/multi-model/{task_id}/ra_1")).json()["data"]
        assert [v["outcome"] for v in view["validations"]] == ["validated"]
    async with db.transaction() as conn:
        kept = (await conn.execute(text("SELECT count(*) FROM validations"))).scalar_one()
    assert kept == 2


async def test_cache_hits_invalidation_and_debug(live: Any, db: Database, org_id: str) -> None:
    await _seed_models(db)
    async with live.client() as client:
        task_id = await _task(client)
        await _tag(client, task_id, "ra_1", JWT)
        await _validate(client, task_id, "ra_1", CLAUDE, "validated", 88)
        view_url = f"/api/assumptions/multi-model/{task_id}/ra_1"
        summary_url = f"/api/assumptions/consensus/{task_id}"
        for url in (view_url, summary_url):
            first = (await client.get(url, params={"debug": "true"})).json()
            second = (await client.get(url, params={"debug": "true"})).json()
            assert (first["cached"], second["cached"]) == (False, True)
            assert first["debug"]["cache_hit"] is False and second["debug"]["cache_hit"] is True
            assert first["debug"]["models_queried"] == second["debug"]["models_queried"] == 1
            assert first["debug"]["query_time_ms"] > 0
            assert first["debug"]["consensus_calculation_time_ms"] > 0
            assert second["debug"]["consensus_calculation_time_ms"] == 0
            assert second["data"]["generated_at"] == first["data"]["generated_at"]
            assert "debug" not in (await client.get(url)).json()
            # only-if-cached is served from the cache now
            hit = await client.get(url, headers={"Cache-Control": "only-if-cached"})
            assert hit.status_code == 200 and hit.json()["cached"] is True

        # A validation recorded through the API invalidates both reads at once.
        await _validate(client, task_id, "ra_1", GPT, "rejected", 80)
        view = (await client.get(view_url)).json()
        assert view["cached"] is False and view["data"]["model_count"] == 2
        summary = (await client.get(summary_url)).json()
        assert summary["cached"] is False
        assert summary["data"]["contentious_tags"] == ["ra_1"]
        assert (await client.get(view_url)).json()["cached"] is True

        # So does one recorded by another process (a worker): the cache is keyed by the
        # task's version in the database, which SQLite's reads query each time, and which
        # PostgreSQL's NOTIFY reports to every API process within milliseconds.
        async with db.transaction() as conn:
            await record_validation(
                conn, org_id, task_id, "ra_1", NewValidation(GEMINI, "partial", 70)
            )
        view = await wait_until_async(
            lambda: _json(client, view_url),
            what="the cached view to be dropped",
            done=lambda view: not view["cached"],
            interval=0.01,
        )
        assert view["data"]["model_count"] == 3
        summary = (await client.get(summary_url)).json()
        assert summary["cached"] is False
        assert summary["data"]["overall_consensus"]["total_validations"] == 3

        # A tag added to the task changes its summary, not the other tag's view.
        await _tag(client, task_id, "ra_2", RATE)
        assert (await client.get(view_url)).json()["cached"] is False  # the version moved
        summary = (await client.get(summary_url)).json()
        assert summary["data"]["overall_consensus"]["total_tags"] == 2


async def test_error_codes(live: Any, db: Database, assert_error: Any) -> None:
    await _seed_models(db)
    async with db.transaction() as conn:
        other_org = await ensure_org(conn, "other")
        foreign = await create_task(conn, other_org, "Not yours")
        await add_tag(conn, other_org, foreign.id, JWT, "ra_1")
    async with live.client() as client:
        task_id = await _task(client)
        await _tag(client, task_id, "ra_1", JWT)
        view = "/api/assumptions/multi-model/{}/{}"
        summary = "/api/assumptions/consensus/{}"

        for unknown in (999_999, foreign.id):  # another organisation's task: like unknown
            assert_error(await client.get(view.format(unknown, "ra_1")), 404, "TASK_NOT_FOUND")
            assert_error(await client.get(summary.format(unknown)), 404, "TASK_NOT_FOUND")
            for path in (
                f"/api/assumptions/tasks/{unknown}",
                f"/api/assumptions/tasks/{unknown}/tags",
            ):
                assert_error(await client.get(path), 404, "TASK_NOT_FOUND")
            posted = await client.post(
                f"/api/assumptions/tasks/{unknown}/tags/ra_1/validations",
                json={"validator_id": CLAUDE, "outcome": "validated", "confidence": 90},
            )
            assert_error(posted, 404, "TASK_NOT_FOUND")
        body = assert_error(
            await client.get(view.format(task_id, "ra_nope")), 404, "RA_TAG_NOT_FOUND"
        )
        assert body["hint"]
        for odd in ("x" * 300, "a b"):  # ids no tag can have: not found, no 5xx
            assert_error(await client.get(view.format(task_id, odd)), 404, "RA_TAG_NOT_FOUND")
        nul_id = await client.get(view.format(task_id, "ra%00x"))  # no NUL in any parameter
        assert_error(nul_id, 422, "VALIDATION_ERROR")
        nul = await client.post(f"/api/assumptions/tasks/{task_id}/tags", json={"text": "a\x00b"})
        assert "body.text" in assert_error(nul, 422, "VALIDATION_ERROR")["error"]
        for cursor in ("nope", "WyJhIl0", "Wy0xXQ"):  # garbage, ["a"], [-1]
            listed = await client.get("/api/assumptions/tasks", params={"cursor": cursor})
            assert_error(listed, 400, "INVALID_CURSOR")
        for bad in ("abc", "-1", "0", "1.5", "12a", "99999999999999999999"):
            assert_error(await client.get(view.format(bad, "ra_1")), 422, "INVALID_TASK_ID")
            assert_error(await client.get(summary.format(bad)), 422, "INVALID_TASK_ID")

        # Nothing cached yet: only-if-cached cannot be served.
        cached_only = {"Cache-Control": "only-if-cached"}
        response = await client.get(view.format(task_id, "ra_1"), headers=cached_only)
        assert_error(response, 504, "CACHE_ERROR")
        assert_error(
            await client.get(summary.format(task_id), headers=cached_only), 504, "CACHE_ERROR"
        )

        # Writes check what they are given.
        url = f"/api/assumptions/tasks/{task_id}/tags/ra_1/validations"
        for bad_body, status, code in (
            (
                {"validator_id": "openai:no-such-model", "outcome": "validated", "confidence": 9},
                422,
                "UNKNOWN_MODEL",
            ),
            ({"validator_id": CLAUDE, "outcome": "maybe", "confidence": 50}, 422, "INVALID_INPUT"),
            (
                {"validator_id": CLAUDE, "outcome": "validated", "confidence": 101},
                422,
                "VALIDATION_ERROR",  # the schema's maximum (issue 21)
            ),
            (
                {"validator_id": CLAUDE, "outcome": "validated", "confidence": "90"},
                422,
                "VALIDATION_ERROR",
            ),
            ({"validator_id": CLAUDE, "outcome": "validated"}, 422, "VALIDATION_ERROR"),
            (
                {"validator_id": CLAUDE, "outcome": "validated", "confidence": 9, "x": 1},
                422,
                "VALIDATION_ERROR",
            ),
        ):
            assert_error(await client.post(url, json=bad_body), status, code)
        tags_url = f"/api/assumptions/tasks/{task_id}/tags"
        assert_error(
            await client.post(tags_url, json={"id": "ra_1", "text": "other"}), 409, "RA_TAG_EXISTS"
        )
        same = await client.post(tags_url, json={"id": "ra_1", "text": JWT})
        assert same.status_code == 200  # the same tag again: a retried request
        # The schema states both rules (issue 21): refused by validation, naming the field.
        assert_error(
            await client.post(tags_url, json={"id": "bad id!", "text": "x"}),
            422,
            "VALIDATION_ERROR",
        )
        assert_error(await client.post(tags_url, json={"text": "   "}), 422, "VALIDATION_ERROR")
        assert_error(
            await client.post("/api/assumptions/tasks", json={"name": ""}), 422, "VALIDATION_ERROR"
        )
        too_long = await client.post("/api/assumptions/tasks", json={"name": "x" * 301})
        assert_error(too_long, 422, "VALIDATION_ERROR")
        validate = f"/api/assumptions/tasks/{task_id}/tags/ra_1/validate"
        unknown_model = await client.post(
            validate, json={"models": ["scripted:utilitarian", "openai:nope"]}
        )
        assert_error(unknown_model, 422, "UNKNOWN_MODEL")
        assert_error(await client.post(validate, json={"models": []}), 422, "VALIDATION_ERROR")

        # The registry edited behind its back: a weight no vote can have.
        await _validate(client, task_id, "ra_1", CLAUDE, "validated", 90)
        async with db.transaction() as conn:
            await conn.execute(
                text("UPDATE models SET weight = -1 WHERE name = 'claude-sonnet-3.5'")
            )
        for path in (view.format(task_id, "ra_1"), summary.format(task_id)):
            body = assert_error(await client.get(path), 500, "CONSENSUS_CALCULATION_ERROR")
            assert "weight" in body["error"] and "valuerank models set" in body["hint"]
        async with db.transaction() as conn:
            await conn.execute(
                text("UPDATE models SET weight = 1 WHERE name = 'claude-sonnet-3.5'")
            )

        # The database fails (here: the table is gone): DATABASE_ERROR, 503, on every route.
        async with db.transaction() as conn:
            await conn.execute(text("DROP TABLE validations"))
        for path in (view.format(task_id, "ra_1"), summary.format(task_id)):
            assert_error(await client.get(path), 503, "DATABASE_ERROR")
        posted = await client.post(
            url, json={"validator_id": CLAUDE, "outcome": "validated", "confidence": 90}
        )
        assert_error(posted, 503, "DATABASE_ERROR")


async def test_reads_need_credentials_by_default(live: Any, assert_error: Any) -> None:
    async with live.client() as client:
        task_id = await _task(client)
        await _tag(client, task_id, "ra_1", JWT)
    async with live.client(token=None) as anonymous:
        for path in (
            f"/api/assumptions/multi-model/{task_id}/ra_1",
            f"/api/assumptions/consensus/{task_id}",
            "/api/assumptions/models",
            "/api/assumptions/tasks",
        ):
            assert_error(await anonymous.get(path), 401, "UNAUTHORIZED")
        response = await anonymous.post("/api/assumptions/tasks", json={"name": "x"})
        assert_error(response, 401, "UNAUTHORIZED")


async def test_models_list_tasks_and_tags_pages(live: Any) -> None:
    async with live.client() as client:
        models = (await client.get("/api/assumptions/models")).json()["data"]
        by_id = {m["id"]: m for m in models["models"]}
        assert models["total_models"] == len(models["models"]) >= 10  # seeded from the catalog
        assert models["active_models"] == sum(1 for m in models["models"] if m["active"])
        persona = by_id["scripted:utilitarian"]
        assert persona["category"] == "synthetic" and persona["provider"] == "scripted"
        assert persona["weight"] == 1.0 and "json_schema" in persona["capabilities"]
        assert persona["description"] and models["last_updated"]

        ids = [await _task(client, f"task {i}") for i in range(3)]
        first = (await client.get("/api/assumptions/tasks", params={"limit": 2})).json()["data"]
        assert [t["id"] for t in first["tasks"]] == [ids[2], ids[1]]
        rest = await client.get(
            "/api/assumptions/tasks", params={"limit": 2, "cursor": first["next_cursor"]}
        )
        assert [t["id"] for t in rest.json()["data"]["tasks"]] == [ids[0]]
        assert rest.json()["data"]["next_cursor"] is None

        created = await client.post(f"/api/assumptions/tasks/{ids[0]}/tags", json={"text": JWT})
        tag = created.json()["data"]
        assert tag["id"].startswith("ra_") and tag["tag_type"] == "COMPLETION_DRIVE_IMPL"
        await _tag(client, ids[0], "ra_b", RATE)
        page = (
            await client.get(f"/api/assumptions/tasks/{ids[0]}/tags", params={"limit": 1})
        ).json()
        assert [t["id"] for t in page["data"]["tags"]] == [tag["id"]]
        more = await client.get(
            f"/api/assumptions/tasks/{ids[0]}/tags",
            params={"limit": 1, "cursor": page["data"]["next_cursor"]},
        )
        assert [t["id"] for t in more.json()["data"]["tags"]] == ["ra_b"]
        task = (await client.get(f"/api/assumptions/tasks/{ids[0]}")).json()["data"]
        assert task["tag_count"] == 2
