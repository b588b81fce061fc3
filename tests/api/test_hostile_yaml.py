"""Hostile YAML over HTTP, on SQLite and PostgreSQL against the real server: every route that
reads a user's YAML (rubrics as JSON and as uploads, definitions' front matter to store or
only to check, the import of single files and of ZIPs) answers an alias bomb or deep nesting
with a 4xx naming the problem, writes nothing, and the server answers other requests
meanwhile; a hypothesis fuzz over the same routes never sees a 5xx."""

from __future__ import annotations

import asyncio
import io
import zipfile
from collections.abc import Awaitable, Callable

import httpx
import hypothesis
import pytest
from hypothesis import HealthCheck
from hypothesis import strategies as st
from sqlalchemy import func, select
from tests.formats.test_yaml_bounds import block_nesting, laughs, merge_bomb

from valuerank.db.tables import definitions, rubrics, runs

from .conftest import DEMO, Live

DEMO_TEXT = DEMO.read_text()
DEMO_BODY = DEMO_TEXT.split("---\n", 2)[2]
COMPAT_MANIFEST = "valuerank-cli/runs/run-1/run_manifest.yaml"

HOSTILE = {
    "laughs": laughs(9),
    "merge-keys": merge_bomb(8),
    "cycle": "a: &a [1, *a]\n",
    "deep-flow": "a: " + "[" * 20_000 + "]" * 20_000,  # under the JSON text limit
    "deep-block": block_nesting(200),
}

Send = Callable[[httpx.AsyncClient, str], Awaitable[httpx.Response]]


def _zip(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def _front_matter(yaml_text: str) -> str:
    """A definition whose front matter is `yaml_text` (its own keys kept first)."""
    return f"---\nname: exp-hostile\n{yaml_text}\n---\n{DEMO_BODY}"


# Each user-YAML entry point: how a YAML text reaches it.
ENTRY_POINTS: dict[str, Send] = {
    "POST /api/rubrics": lambda c, y: c.post("/api/rubrics", json={"name": "r", "yaml": y}),
    "POST /api/rubrics/import": lambda c, y: c.post(
        "/api/rubrics/import", params={"name": "r"}, content=y.encode()
    ),
    "POST /api/definitions": lambda c, y: c.post(
        "/api/definitions", json={"markdown": _front_matter(y)}
    ),
    "POST /api/definitions/import": lambda c, y: c.post(
        "/api/definitions/import", files={"file": ("exp-hostile.md", _front_matter(y).encode())}
    ),
    "POST /api/import (rubric file)": lambda c, y: c.post(
        "/api/import", params={"filename": "values_rubric.yaml"}, content=y.encode()
    ),
    "POST /api/import (a ZIP's run manifest)": lambda c, y: c.post(
        "/api/import", files={"file": ("cli.zip", _zip({COMPAT_MANIFEST: y}))}
    ),
    "POST /api/import (a workspace's header)": lambda c, y: c.post(
        "/api/import", files={"file": ("ws.zip", _zip({"workspace.yaml": y}))}
    ),
}


async def _stored(live: Live) -> tuple[int, ...]:
    async with live.db.transaction() as conn:
        return tuple(
            [
                int(await conn.scalar(select(func.count()).select_from(t)) or 0)
                for t in (runs, definitions, rubrics)
            ]
        )


@pytest.mark.parametrize("hostile", HOSTILE, ids=list(HOSTILE))
async def test_hostile_yaml_is_a_4xx_at_every_entry_point(live: Live, hostile: str) -> None:
    before = await _stored(live)
    async with live.client() as client:
        for label, send in ENTRY_POINTS.items():
            answer = await send(client, HOSTILE[hostile])
            assert 400 <= answer.status_code < 500, (label, answer.status_code, answer.text)
            body = answer.json()
            assert body["code"] in {"INVALID_FILE", "INVALID_IMPORT"}, (label, body)
            assert "YAML" in body["error"], (label, body)  # the parser's bound, not the layout
    assert await _stored(live) == before  # nothing half-written


async def test_a_viewer_checking_a_definition_gets_the_error_not_a_frozen_server(
    live: Live,
) -> None:
    """/api/definitions/validate is open to viewers: it reports the bound as the file's
    error (its 200 answer for a file that does not parse)."""
    async with live.client_for("default", "viewer") as viewer:
        for hostile, text in HOSTILE.items():
            answer = await viewer.post(
                "/api/definitions/validate", json={"markdown": _front_matter(text)}
            )
            assert answer.status_code == 200, (hostile, answer.text)
            checked = answer.json()["data"]
            assert checked["valid"] is False, hostile
            assert "YAML" in checked["error"]["message"], (hostile, checked)


async def test_the_server_answers_others_while_bombs_arrive(live: Live) -> None:
    """Twenty bombs at once from one client; another client's reads are all answered, and
    every bomb gets its 422 (before the bound, one took minutes and gigabytes)."""
    async with live.client() as attacker, live.client() as other:
        bombs = [
            asyncio.ensure_future(ENTRY_POINTS["POST /api/rubrics"](attacker, HOSTILE["laughs"]))
            for _ in range(20)
        ]
        reads = [await other.get("/api/rubrics") for _ in range(5)]
        answers = await asyncio.gather(*bombs)
    assert [r.status_code for r in reads] == [200] * 5
    assert {a.status_code for a in answers} == {422}


def _yaml_texts() -> st.SearchStrategy[str]:
    """YAML-shaped text: random tokens of YAML's syntax (anchors, aliases, merge keys, flow and
    block collections, tags, quotes) with line breaks and indentation, plus plain junk."""
    tokens = st.sampled_from(
        [
            "a",
            "b",
            ": ",
            "- ",
            "&x ",
            "*x",
            "&y ",
            "*y",
            "<<: ",
            "[",
            "]",
            "{",
            "}",
            ", ",
            "\n",
            "\n  ",
            "\n    ",
            "'",
            '"',
            "!!str ",
            "!!python/object ",
            "|",
            ">",
            "#",
            "---\n",
            "...\n",
            "~",
            "1e30",
            "\x00",
            "\t",
            "?",
            "%YAML 1.1\n",
            "values:\n  ",
        ]
    )
    return st.one_of(
        st.lists(tokens, max_size=60).map("".join),
        st.text(max_size=200),
    )


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=list(ENTRY_POINTS))
async def test_fuzzed_yaml_never_answers_5xx(live: Live, entry: str) -> None:
    send = ENTRY_POINTS[entry]
    loop = asyncio.get_running_loop()
    seen: list[int] = []

    @hypothesis.settings(
        max_examples=40,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @hypothesis.given(text=_yaml_texts())
    def check(text: str) -> None:
        async def one() -> httpx.Response:
            async with live.client() as client:
                return await send(client, text)

        answer = asyncio.run_coroutine_threadsafe(one(), loop).result(timeout=30)
        seen.append(answer.status_code)
        assert answer.status_code < 500, (text, answer.status_code, answer.text)

    await asyncio.to_thread(check)
    assert len(seen) >= 40 and any(400 <= s < 500 for s in seen)
