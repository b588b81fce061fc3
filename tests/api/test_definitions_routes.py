"""/api/definitions on SQLite and PostgreSQL against the real server: create (fields or
markdown), import the original CLI's file (raw body and multipart), list with cursors and
filters, show by prefix, fork, lineage, tree, diff; roles and other organisations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.cli_corpus import Corpus

from valuerank.formats import parse_definition
from valuerank.refs import short_id

DEMO_TEXT = (Path(__file__).parents[2] / "src/valuerank/demo/exp-demo-whistleblower.md").read_text()

FIELDS: dict[str, Any] = {
    "name": "exp-api-trolley",
    "category": "Care vs Fairness",
    "preamble": "Answer with a rating.",
    "template": "A trolley will hit [Group]. Pull the lever if it [Cost]?",
    "dimensions": [
        {
            "name": "Group",
            "levels": [
                {"score": 2, "label": "five people", "options": ["five people"]},
                {"score": 1, "label": "one person", "options": ["one person", "a stranger"]},
            ],
        },
        {
            "name": "Cost",
            "levels": [
                {"score": 1, "label": "harms nobody", "options": ["harms nobody"]},
                {"score": 2, "label": "harms you", "options": ["harms you"]},
            ],
        },
    ],
}


async def test_create_import_list_and_show(
    live: Any, cli_corpus: Corpus, assert_error: Any
) -> None:
    cli_file = cli_corpus.path("definitions", cli_corpus.definition)
    async with live.client() as client:
        raw = await client.post(
            "/api/definitions/import",
            params={"filename": cli_file.name},
            content=cli_file.read_bytes(),
            headers={"Content-Type": "text/markdown"},
        )
        assert raw.status_code == 201, raw.text
        imported = raw.json()["data"]
        assert imported["created"] is True and imported["version_label"] == "v1"
        assert imported["source_file"] == cli_file.name
        expected = parse_definition(cli_file.read_text(), source=cli_file.name)
        assert imported["content"] == expected.to_dict()
        again = await client.post(
            "/api/definitions/import",
            files={"file": (cli_file.name, cli_file.read_bytes(), "text/markdown")},
        )
        assert again.status_code == 200 and again.json()["data"]["created"] is False
        assert again.json()["data"]["id"] == imported["id"]

        made = await client.post("/api/definitions", json={**FIELDS, "label": "draft-1"})
        assert made.status_code == 201, made.text
        created = made.json()["data"]
        assert created["version_label"] == "draft-1" and created["name"] == FIELDS["name"]
        levels = created["content"]["dimensions"][0]["levels"]
        assert [lv["score"] for lv in levels] == [1, 2]  # sorted by score, as the file has them
        assert levels[0]["options"] == ["one person", "a stranger"]
        same = await client.post("/api/definitions", json=FIELDS)
        assert same.status_code == 200 and same.json()["data"]["id"] == created["id"]

        demo = await client.post("/api/definitions", json={"markdown": DEMO_TEXT})
        assert demo.status_code == 201
        demo_id = demo.json()["data"]["id"]

        listed = (await client.get("/api/definitions")).json()["data"]
        assert listed["count"] == 3 and listed["next_cursor"] is None
        # Newest first (versions made in the same second are ordered by id).
        assert {d["id"] for d in listed["definitions"]} == {imported["id"], created["id"], demo_id}
        seen: list[str] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"limit": 1}
            if cursor:
                params["cursor"] = cursor
            one = (await client.get("/api/definitions", params=params)).json()["data"]
            seen += [d["id"] for d in one["definitions"]]
            cursor = one["next_cursor"]
            if cursor is None:
                break
        assert seen == [d["id"] for d in listed["definitions"]]
        by_name = (await client.get("/api/definitions", params={"name": "TROLLEY"})).json()
        assert [d["id"] for d in by_name["data"]["definitions"]] == [created["id"]]
        by_label = (await client.get("/api/definitions", params={"label": "draft-1"})).json()
        assert [d["id"] for d in by_label["data"]["definitions"]] == [created["id"]]
        wildcard = (await client.get("/api/definitions", params={"name": "%"})).json()
        assert wildcard["data"]["count"] == 0  # LIKE wildcards are matched literally

        shown = (await client.get(f"/api/definitions/{short_id(created['id'])}")).json()["data"]
        assert shown["id"] == created["id"] and shown["content"] == created["content"]
        assert shown["matching_rules"] == {"machine": [], "prose": []}

        comma = {**FIELDS, "name": "x", "dimensions": [{**FIELDS["dimensions"][0]}]}
        comma["dimensions"][0]["levels"] = [{"score": 1, "label": "a", "options": ["b, c"]}]
        assert (
            "comma"
            in assert_error(
                await client.post("/api/definitions", json=comma), 422, "INVALID_INPUT"
            )["error"]
        )
        broken = await client.post("/api/definitions", json={"markdown": "# Template\n\nhi"})
        assert_error(broken, 422, "INVALID_FILE")
        escaped = DEMO_TEXT.replace("name: exp-demo-whistleblower", 'name: "demo\\0"')
        assert escaped != DEMO_TEXT  # a NUL written as YAML's escape: PostgreSQL cannot hold it
        nul = await client.post("/api/definitions", json={"markdown": escaped})
        assert_error(nul, 422, "INVALID_FILE")
        nul_field = await client.post("/api/definitions", json={**FIELDS, "name": "a\x00b"})
        assert "body.name" in assert_error(nul_field, 422, "VALIDATION_ERROR")["error"]
        nul_file = await client.post("/api/definitions", json={"markdown": DEMO_TEXT + "\x00"})
        assert_error(nul_file, 422, "INVALID_FILE")  # a whole file: its parser names the line
        no_options = {**FIELDS, "name": "exp-no-options"}
        no_options["dimensions"] = [
            {"name": "Group", "levels": [{"score": 1, "label": "a crowd"}]},
            FIELDS["dimensions"][1],
        ]
        bare = await client.post("/api/definitions", json=no_options)
        assert bare.status_code == 201, bare.text  # the label is the level's one option
        assert bare.json()["data"]["content"]["dimensions"][0]["levels"][0]["options"] == [
            "a crowd"
        ]
        both = await client.post("/api/definitions", json={**FIELDS, "markdown": DEMO_TEXT})
        assert_error(both, 422, "VALIDATION_ERROR")
        assert_error(await client.post("/api/definitions", json={}), 422, "VALIDATION_ERROR")
        extra = await client.post("/api/definitions", json={**FIELDS, "colour": "red"})
        assert_error(extra, 422, "VALIDATION_ERROR")
        not_utf8 = await client.post("/api/definitions/import", content=b"\xff\xfe---")
        assert_error(not_utf8, 400, "INVALID_UPLOAD")
        assert_error(await client.post("/api/definitions/import"), 400, "INVALID_UPLOAD")
        no_file = await client.post("/api/definitions/import", files={"other": ("a", b"x")})
        assert_error(no_file, 400, "INVALID_UPLOAD")
        bad_cursor = await client.get("/api/definitions", params={"cursor": "nonsense"})
        assert_error(bad_cursor, 400, "INVALID_CURSOR")
        assert_error(await client.get("/api/definitions/nope"), 404, "DEFINITION_NOT_FOUND")
        # Nothing was stored by the refused requests.
        assert (await client.get("/api/definitions")).json()["data"]["count"] == 4


async def test_fork_lineage_tree_and_diff(live: Any, assert_error: Any) -> None:
    async with live.client() as client:
        root = (await client.post("/api/definitions", json=FIELDS)).json()["data"]
        changed = await client.post(
            f"/api/definitions/{root['id']}/fork",
            json={"changes": {"template": "A trolley will hit [Group] unless it [Cost]."}},
        )
        assert changed.status_code == 201, changed.text
        child = changed.json()["data"]
        assert child["version_label"] == "v1.1" and child["parent_id"] == root["id"]
        assert child["content"]["dimensions"] == root["content"]["dimensions"]
        copy = await client.post(f"/api/definitions/{root['id']}/fork", json={"label": "copy"})
        assert copy.status_code == 201
        assert copy.json()["data"]["content_hash"] == root["content_hash"]
        grandchild = (
            await client.post(
                f"/api/definitions/{short_id(child['id'])}/fork", json={"markdown": DEMO_TEXT}
            )
        ).json()["data"]
        assert grandchild["version_label"] == "v1.1.1"
        assert grandchild["name"] == "exp-demo-whistleblower"

        lineage = (await client.get(f"/api/definitions/{child['id']}/lineage")).json()["data"]
        assert [a["id"] for a in lineage["ancestors"]] == [root["id"]]
        assert [(d["id"], d["depth"]) for d in lineage["descendants"]] == [(grandchild["id"], 1)]
        tree = (await client.get(f"/api/definitions/{grandchild['id']}/tree")).json()["data"]
        assert tree["id"] == root["id"]
        assert [c["version_label"] for c in tree["children"]] == ["copy", "v1.1"]
        assert [c["id"] for c in tree["children"][1]["children"]] == [grandchild["id"]]

        diff = (await client.get(f"/api/definitions/{root['id']}/diff/{child['id']}")).json()
        data = diff["data"]
        assert data["from"]["id"] == root["id"] and data["to"]["id"] == child["id"]
        assert data["is_empty"] is False and data["template"]["before"] == FIELDS["template"]
        assert data["dimensions"]["changed"] == [] and data["preamble"] is None
        same = await client.get(f"/api/definitions/{root['id']}/diff/{copy.json()['data']['id']}")
        assert same.json()["data"]["is_empty"] is True

        taken = await client.post(f"/api/definitions/{root['id']}/fork", json={"label": "v1.1"})
        assert_error(taken, 409, "CONFLICT")
        bad_label = await client.post(f"/api/definitions/{root['id']}/fork", json={"label": "!"})
        assert_error(bad_label, 422, "INVALID_INPUT")
        no_change = await client.post(f"/api/definitions/{root['id']}/fork", json={"changes": {}})
        assert_error(no_change, 422, "INVALID_INPUT")
        unknown_dim = await client.post(
            f"/api/definitions/{root['id']}/fork",
            json={"changes": {"matching_rules": "Nope.score > 1"}},
        )
        assert_error(unknown_dim, 422, "INVALID_FILE")
        missing = await client.get(f"/api/definitions/{root['id']}/diff/nope")
        assert_error(missing, 404, "DEFINITION_NOT_FOUND")


async def test_roles_and_other_organisations(live: Any, assert_error: Any) -> None:
    async with live.client() as client:
        mine = (await client.post("/api/definitions", json=FIELDS)).json()["data"]
    async with live.client_for("default", "viewer") as viewer:
        assert (await viewer.get(f"/api/definitions/{mine['id']}")).status_code == 200
        assert (await viewer.get("/api/definitions")).json()["data"]["count"] == 1
        for response in (
            await viewer.post("/api/definitions", json=FIELDS),
            await viewer.post("/api/definitions/import", content=DEMO_TEXT.encode()),
            await viewer.post(f"/api/definitions/{mine['id']}/fork", json={}),
        ):
            assert_error(response, 403, "FORBIDDEN")
    async with live.client_for("default", "member") as member:
        made = await member.post("/api/definitions/import", content=DEMO_TEXT.encode())
        assert made.status_code == 201
    async with live.client_for("elsewhere", "admin") as outsider:
        assert (await outsider.get("/api/definitions")).json()["data"]["count"] == 0
        theirs = (await outsider.post("/api/definitions", json=FIELDS)).json()["data"]
        assert theirs["id"] != mine["id"]
        for response in (
            await outsider.get(f"/api/definitions/{mine['id']}"),
            await outsider.get(f"/api/definitions/{short_id(mine['id'])}"),
            await outsider.post(f"/api/definitions/{mine['id']}/fork", json={}),
            await outsider.get(f"/api/definitions/{mine['id']}/lineage"),
            await outsider.get(f"/api/definitions/{mine['id']}/tree"),
            await outsider.get(f"/api/definitions/{theirs['id']}/diff/{mine['id']}"),
            await outsider.get(f"/api/definitions/{mine['id']}/diff/{theirs['id']}"),
        ):
            assert_error(response, 404, "DEFINITION_NOT_FOUND")
