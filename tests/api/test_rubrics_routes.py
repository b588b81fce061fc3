"""/api/rubrics on SQLite and PostgreSQL against the real server: import a values rubric of
the CLI's corpus (the project's and the CLI's own; raw body, multipart, JSON), versions of
a name, list/show/lineage/tree; roles and other organisations."""

from __future__ import annotations

from typing import Any

from tests.cli_corpus import PROJECT as PROJECT_CORPUS
from tests.cli_corpus import Corpus

from valuerank.formats import parse_rubric
from valuerank.refs import short_id


async def test_import_versions_list_show_lineage(
    live: Any, cli_corpus: Corpus, assert_error: Any
) -> None:
    path = cli_corpus.path("config", "values_rubric.yaml")
    text = path.read_text()
    value = parse_rubric(text)[0].value("Physical_Safety")
    assert value is not None
    safety = value.definition
    changed = text.replace(safety, "Keeping people safe from harm.")
    assert changed != text
    async with live.client() as client:
        raw = await client.post(
            "/api/rubrics/import",
            params={"filename": path.name},
            content=path.read_bytes(),
            headers={"Content-Type": "application/yaml"},
        )
        assert raw.status_code == 201, raw.text
        first = raw.json()["data"]
        assert first["name"] == "values_rubric" and first["version_label"] == "v1"
        assert "Physical_Safety" in first["values"] and first["created"] is True
        assert first["content"]["values"]["Physical_Safety"]["definition"] == safety
        again = await client.post(
            "/api/rubrics/import", files={"file": (path.name, path.read_bytes(), "text/yaml")}
        )
        assert again.status_code == 200 and again.json()["data"]["id"] == first["id"]

        made = await client.post("/api/rubrics", json={"name": "values_rubric", "yaml": changed})
        assert made.status_code == 201, made.text
        second = made.json()["data"]
        assert second["version_label"] == "v1.1" and second["parent_id"] == first["id"]
        other = await client.post("/api/rubrics", json={"name": "other", "yaml": text})
        assert other.status_code == 201 and other.json()["data"]["version_label"] == "v1"

        listed = (await client.get("/api/rubrics")).json()["data"]
        assert listed["count"] == 3 and listed["next_cursor"] is None
        paged = (await client.get("/api/rubrics", params={"limit": 2})).json()["data"]
        rest = await client.get("/api/rubrics", params={"limit": 2, "cursor": paged["next_cursor"]})
        ids = [r["id"] for r in paged["rubrics"] + rest.json()["data"]["rubrics"]]
        assert ids == [r["id"] for r in listed["rubrics"]]
        named = (await client.get("/api/rubrics", params={"name": "VALUES"})).json()["data"]
        assert {r["id"] for r in named["rubrics"]} == {first["id"], second["id"]}
        labelled = (await client.get("/api/rubrics", params={"label": "v1.1"})).json()["data"]
        assert [r["id"] for r in labelled["rubrics"]] == [second["id"]]

        shown = (await client.get(f"/api/rubrics/{short_id(second['id'])}")).json()["data"]
        assert shown["id"] == second["id"] and shown["source_file"] is None
        assert shown["content"]["values"]["Physical_Safety"]["definition"] == (
            "Keeping people safe from harm."
        )
        lineage = (await client.get(f"/api/rubrics/{second['id']}/lineage")).json()["data"]
        assert [a["id"] for a in lineage["ancestors"]] == [first["id"]]
        tree = (await client.get(f"/api/rubrics/{first['id']}/tree")).json()["data"]
        assert [c["id"] for c in tree["children"]] == [second["id"]]

        broken = await client.post("/api/rubrics", json={"name": "x", "yaml": "- a\n- b\n"})
        assert_error(broken, 422, "INVALID_FILE")
        nul = await client.post("/api/rubrics", json={"name": "x", "yaml": "values:\x00"})
        assert_error(nul, 422, "INVALID_FILE")
        nameless = await client.post("/api/rubrics/import", content=path.read_bytes())
        assert_error(nameless, 422, "INVALID_INPUT")
        assert_error(await client.get("/api/rubrics/nope"), 404, "RUBRIC_NOT_FOUND")
        assert_error(await client.get("/api/rubrics/%00abc"), 422, "VALIDATION_ERROR")
        assert (await client.get("/api/rubrics")).json()["data"]["count"] == 3


async def test_roles_and_other_organisations(live: Any, assert_error: Any) -> None:
    text = PROJECT_CORPUS.path("config", "values_rubric.yaml").read_text()
    async with live.client_for("default", "member") as member:
        made = await member.post("/api/rubrics", json={"name": "mine", "yaml": text})
        assert made.status_code == 201
        mine = made.json()["data"]
    async with live.client_for("default", "viewer") as viewer:
        assert (await viewer.get(f"/api/rubrics/{mine['id']}")).status_code == 200
        refused = await viewer.post("/api/rubrics", json={"name": "v", "yaml": text})
        assert_error(refused, 403, "FORBIDDEN")
        upload = await viewer.post("/api/rubrics/import?name=v", content=text.encode())
        assert_error(upload, 403, "FORBIDDEN")
    async with live.client_for("elsewhere", "admin") as outsider:
        assert (await outsider.get("/api/rubrics")).json()["data"]["count"] == 0
        for path in ("", "/lineage", "/tree"):
            response = await outsider.get(f"/api/rubrics/{mine['id']}{path}")
            assert_error(response, 404, "RUBRIC_NOT_FOUND")
        # Their own rubric of the same name starts its own lineage.
        theirs = await outsider.post("/api/rubrics", json={"name": "mine", "yaml": text})
        assert theirs.status_code == 201 and theirs.json()["data"]["version_label"] == "v1"
