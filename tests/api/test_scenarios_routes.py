"""Scenario expansion over HTTP on SQLite and PostgreSQL against the real server: a definition
of the CLI's corpus (the project's, and the CLI's own files) expands to exactly its scenarios
file, pages keep one sample, samples
are nested and reproducible by seed; limits, roles and other organisations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from tests.cli_corpus import PROJECT as PROJECT_CORPUS
from tests.cli_corpus import Corpus

from valuerank.db import Database
from valuerank.definitions.service import import_definition
from valuerank.orgs import ensure_org
from valuerank.refs import short_id


def _pair(root: Path) -> tuple[Path, Path]:
    folder = root / "definitions"
    [md] = sorted(folder.glob("exp-*.md"))
    stem = md.name[len("exp-") : -len(".md")]
    [generated] = sorted(folder.glob(f"exp-[0-9][0-9][0-9].{stem}.yaml"))
    return md, generated


async def _import(live: Any, md: Path) -> str:
    async with live.client() as client:
        response = await client.post(
            "/api/definitions/import", params={"filename": md.name}, content=md.read_bytes()
        )
    assert response.status_code == 201, response.text
    definition_id: str = response.json()["data"]["id"]
    return definition_id


async def test_expansion_matches_the_cli_and_pages_through_one_sample(
    live: Any, cli_corpus: Corpus, assert_error: Any
) -> None:
    md, generated = _pair(cli_corpus.root)
    # A 20% sample, and a smaller one of the same seed nested inside it.
    percent_count = cli_corpus.scenario_count * 20 // 100
    small_count = percent_count // 2
    expected = yaml.safe_load(generated.read_text())
    definition_id = await _import(live, md)
    async with live.client_for("default", "viewer") as client:  # expansion writes nothing
        whole = await client.post(
            "/api/scenarios/expand", json={"definition_id": short_id(definition_id)}
        )
        assert whole.status_code == 200, whole.text
        data = whole.json()["data"]
        assert data["definition_id"] == definition_id
        assert data["total"] == data["selected"] == len(expected["scenarios"])
        assert data["sample_seed"] is None
        assert data["scenario_ids"] == list(expected["scenarios"])
        got = yaml.safe_load(data["yaml"])
        assert got["scenarios"] == expected["scenarios"]
        first = data["scenarios"][0]
        assert first == {"id": data["scenario_ids"][0], **expected["scenarios"][first["id"]]}

        url = f"/api/definitions/{definition_id}/scenarios"
        seen: list[str] = []
        params: dict[str, Any] = {"limit": 40}
        while True:
            body = (await client.get(url, params=params)).json()["data"]
            assert body["total"] == len(expected["scenarios"])
            seen += [s["id"] for s in body["scenarios"]]
            if body["next_cursor"] is None:
                break
            params = {"limit": 40, "cursor": body["next_cursor"]}
        assert seen == list(expected["scenarios"])

        # A sample with a drawn seed: the cursor keeps it, so the pages are of one sample.
        sampled: list[str] = []
        params = {"limit": 5, "sample_percentage": 20}
        seeds = set()
        while True:
            body = (await client.get(url, params=params)).json()["data"]
            seeds.add(body["sample_seed"])
            assert body["selected"] == percent_count and body["sample_percentage"] == 20
            sampled += [s["id"] for s in body["scenarios"]]
            if body["next_cursor"] is None:
                break
            params = {"limit": 5, "sample_percentage": 20, "cursor": body["next_cursor"]}
        [seed] = seeds
        assert len(sampled) == percent_count and seed is not None
        again = await client.post(
            "/api/scenarios/expand",
            json={"definition_id": definition_id, "sample_percentage": 20, "sample_seed": seed},
        )
        assert again.json()["data"]["scenario_ids"] == sampled
        # Samples of one seed are nested: the smaller sample is inside the 20% one.
        small = await client.get(url, params={"sample_size": small_count, "sample_seed": seed})
        small_ids = [s["id"] for s in small.json()["data"]["scenarios"]]
        assert len(small_ids) == small_count and set(small_ids) <= set(sampled)
        every = await client.post(
            "/api/scenarios/expand", json={"definition_id": definition_id, "mode": "all"}
        )
        # One option per level in these files.
        assert every.json()["data"]["total"] == cli_corpus.scenario_count

        both = await client.get(url, params={"sample_size": 3, "sample_percentage": 5})
        assert_error(both, 422, "INVALID_INPUT")
        body_both = await client.post(
            "/api/scenarios/expand",
            json={"definition_id": definition_id, "sample_size": 3, "sample_percentage": 5},
        )
        assert_error(body_both, 422, "VALIDATION_ERROR")
        assert_error(await client.get(url, params={"mode": "most"}), 422, "VALIDATION_ERROR")
        stray = await client.get(url, params={"cursor": "WyJub3BlIiwgbnVsbF0"})
        assert_error(stray, 400, "INVALID_CURSOR")
        assert_error(
            await client.get(url, params={"sample_percentage": 0}), 422, "VALIDATION_ERROR"
        )


async def test_huge_expansions_are_refused(
    live: Any, db: Database, org_id: str, assert_error: Any
) -> None:
    levels = "\n".join(f"| {i} | level {i} | option {i} |" for i in range(1, 21))
    dims = "\n\n".join(
        f"## D{n}\n\n| Score | Label | Options |\n|---|---|---|\n{levels}" for n in range(5)
    )
    text = (
        "---\nname: exp-huge\n---\n\n# Template\n\n"
        + " ".join(f"[D{n}]" for n in range(5))
        + "\n\n# Dimensions\n\n"
        + dims
        + "\n"
    )
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org_id, text)
    async with live.client() as client:
        refused = await client.get(f"/api/definitions/{stored.version.id}/scenarios")
        assert "3200000" in assert_error(refused, 422, "TOO_MANY_SCENARIOS")["error"]


async def test_other_organisations_definitions_are_not_found(
    live: Any, db: Database, assert_error: Any
) -> None:
    md, _ = _pair(PROJECT_CORPUS.root)
    async with db.transaction() as conn:
        other = await ensure_org(conn, "elsewhere")
        theirs, _ = await import_definition(conn, other, md.read_text())
    async with live.client() as client:
        for response in (
            await client.get(f"/api/definitions/{theirs.version.id}/scenarios"),
            await client.post("/api/scenarios/expand", json={"definition_id": theirs.version.id}),
            await client.get("/api/definitions/nope/scenarios"),
        ):
            assert_error(response, 404, "DEFINITION_NOT_FOUND")
