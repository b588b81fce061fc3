"""Multi-model validation end to end, on SQLite and PostgreSQL: a request through the API
enqueues one `validate` job per model, a real worker asks the scripted personas, the
validations are recorded and their consensus recomputed, and /ws/updates streams the updates
to a real WebSocket client — which disconnects, reconnects from the last sequence number it
saw, and misses nothing."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from sqlalchemy import func, select
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from valuerank.cli.live import in_process_worker
from valuerank.db import Database
from valuerank.db.tables import jobs
from valuerank.orgs import ensure_org
from valuerank.pipeline.calls import ProviderPool
from valuerank.queue import QueueSettings
from valuerank.validation.store import NewValidation, add_tag, create_task, record_validation

from .conftest import TOKEN, Live

FAST = QueueSettings(poll_seconds=0.02, heartbeat_seconds=0.05, retry_base_seconds=0.0)
# Tags chosen for what the personas of providers/scripted_validation.py say of them:
# on RETRY the utilitarian, the centrist and the agreeable validate (94, 72, 95) and the
# contrarian rejects (94): the first three agree, the utilitarian and contrarian collide.
RETRY = "#PATTERN_MOMENTUM: Retry failed requests three times"
JWT = "#COMPLETION_DRIVE_IMPL: Using JWT tokens for stateless authentication"
AGREE = ("scripted:utilitarian", "scripted:centrist", "scripted:agreeable")
CLASH = ("scripted:utilitarian", "scripted:contrarian")


def _worker(db: Database) -> Any:
    return in_process_worker(db, settings=FAST, providers=ProviderPool(environ={}))


def _ws_url(live: Live, query: str = "") -> str:
    return live.url.replace("http://", "ws://") + "/ws/updates" + (f"?{query}" if query else "")


def _socket(live: Any, query: str = "", token: str | None = TOKEN) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return connect(_ws_url(live, query), additional_headers=headers, open_timeout=10)


async def _recv(ws: ClientConnection, timeout: float = 30) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), timeout))
    return message


async def test_models_validate_through_the_queue_and_updates_stream(
    live: Any, db: Database, org_id: str, assert_error: Any
) -> None:
    async with live.client() as client:
        task = (await client.post("/api/assumptions/tasks", json={"name": "Auth API"})).json()
        task_id = task["data"]["id"]
        for tag_id, body in (("ra_retry", RETRY), ("ra_jwt", JWT)):
            response = await client.post(
                f"/api/assumptions/tasks/{task_id}/tags", json={"id": tag_id, "text": body}
            )
            assert response.status_code == 201
        base = f"/api/assumptions/tasks/{task_id}/tags"

        async with _socket(live) as ws:
            hello = await _recv(ws)
            assert hello == {"type": "subscribed", "last_seq": 0, "after": 0}

            # An unknown model refuses the whole request: nothing is enqueued.
            refused = await client.post(
                f"{base}/ra_retry/validate", json={"models": [*AGREE, "scripted:nobody"]}
            )
            assert_error(refused, 422, "UNKNOWN_MODEL")
            async with db.transaction() as conn:
                assert await conn.scalar(select(func.count()).select_from(jobs)) == 0

            asked = await client.post(f"{base}/ra_retry/validate", json={"models": list(AGREE)})
            assert asked.status_code == 202, asked.text
            assert asked.json()["data"]["enqueued"] == 3
            again = await client.post(f"{base}/ra_retry/validate", json={"models": list(AGREE)})
            assert again.json()["data"]["enqueued"] == 0  # idempotent: asked once per tag
            assert [j["job_id"] for j in again.json()["data"]["jobs"]] == [
                j["job_id"] for j in asked.json()["data"]["jobs"]
            ]
            clash = await client.post(f"{base}/ra_jwt/validate", json={"models": list(CLASH)})
            assert clash.json()["data"]["enqueued"] == 2

            seen: list[dict[str, Any]] = []
            async with _worker(db):
                # Four updates live, then the client goes away…
                while len(seen) < 4:
                    seen.append(await _recv(ws))
                await ws.close()
                # …and comes back after the last sequence number it saw: the rest, once each.
                async with _socket(live, f"after={seen[-1]['seq']}") as again_ws:
                    hello = await _recv(again_ws)
                    assert hello["after"] == seen[-1]["seq"]
                    while len(seen) < 10:
                        seen.append(await _recv(again_ws))

        assert [u["seq"] for u in seen] == list(range(1, 11))
        added = [u for u in seen if u["type"] == "multi_model.validation_added"]
        updated = [u for u in seen if u["type"] == "multi_model.consensus_updated"]
        assert len(added) == len(updated) == 5
        for u in seen:
            assert u["timestamp"] and u["context"]["task_id"] == str(task_id)
        for a in added:
            assert a["data"]["action"] == "validation_created"
            assert a["data"]["validation"]["source"] == "job"
            assert a["data"]["model"]["category"] == "synthetic"
        for u in updated:
            assert u["data"]["action"] == "consensus_recalculated"
            assert u["data"]["trigger"]["source"] == "job"
        last_jwt = [u for u in updated if u["context"]["ra_tag_id"] == "ra_jwt"][-1]
        assert last_jwt["data"]["consensus"]["total_validations"] == 2
        assert last_jwt["data"]["consensus"]["model_disagreement"] is True

        # Agreement: the three personas validate RETRY.
        view = (await client.get(f"/api/assumptions/multi-model/{task_id}/ra_retry")).json()
        data = view["data"]
        assert {v["validator_id"] for v in data["validations"]} == set(AGREE)
        assert {v["outcome"] for v in data["validations"]} == {"validated"}
        assert all(v["source"] == "job" for v in data["validations"])
        assert all("synthetic answer from scripted:" in v["notes"] for v in data["validations"])
        assert data["consensus"]["consensus"] == 1.0
        assert data["consensus"]["agreement_level"] == "STRONG"
        assert data["consensus"]["model_disagreement"] is False
        # Disagreement: the contrarian rejects what the utilitarian validates.
        jwt = (await client.get(f"/api/assumptions/multi-model/{task_id}/ra_jwt")).json()["data"]
        outcomes = {v["validator_id"]: v["outcome"] for v in jwt["validations"]}
        assert sorted(outcomes.values()) == ["rejected", "validated"]
        assert "conflicting_outcomes" in jwt["consensus"]["disagreement_reasons"]
        summary = (await client.get(f"/api/assumptions/consensus/{task_id}")).json()["data"]
        assert summary["contentious_tags"] == ["ra_jwt"]
        assert summary["high_confidence_tags"] == ["ra_retry"]
        assert summary["overall_consensus"]["total_validations"] == 5


async def test_updates_reach_only_their_organisation(live: Any, db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        other = await ensure_org(conn, "other")
        theirs = await create_task(conn, other, "Theirs")
        await add_tag(conn, other, theirs.id, JWT, "ra_1")
        ours = await create_task(conn, org_id, "Ours")
        await add_tag(conn, org_id, ours.id, JWT, "ra_1")
        mine_too = await create_task(conn, org_id, "Ours, another")
        await add_tag(conn, org_id, mine_too.id, JWT, "ra_1")
    vote = NewValidation("scripted:utilitarian", "validated", 80)
    async with _socket(live, "after=0") as ws, _socket(live, f"after=0&task_id={ours.id}") as one:
        assert (await _recv(ws))["type"] == "subscribed"
        assert (await _recv(one))["type"] == "subscribed"
        async with db.transaction() as conn:
            await record_validation(conn, other, theirs.id, "ra_1", vote)
            await record_validation(conn, org_id, mine_too.id, "ra_1", vote)
            await record_validation(conn, org_id, ours.id, "ra_1", vote)
        got = [await _recv(ws) for _ in range(4)]
        assert [g["context"]["task_id"] for g in got] == [str(mine_too.id)] * 2 + [str(ours.id)] * 2
        assert [g["seq"] for g in got] == [1, 2, 3, 4]  # the organisation's own sequence
        filtered = [await _recv(one) for _ in range(2)]
        assert [f["seq"] for f in filtered] == [3, 4]
        with pytest.raises(TimeoutError):  # nothing of the other organisation follows
            await _recv(ws, timeout=1.0)


async def test_the_socket_needs_credentials_and_valid_parameters(live: Any) -> None:
    with pytest.raises(InvalidStatus) as refused:  # closed before the handshake completes
        async with _socket(live, token=None):
            pass
    assert refused.value.response.status_code == 403
    for query, reason in (
        ("after=-1", "after must be"),
        ("after=x", "after must be"),
        ("task_id=abc", "invalid task id"),
    ):
        async with _socket(live, query) as ws:
            with pytest.raises(ConnectionClosed) as closed:
                await _recv(ws, timeout=10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
            assert reason in closed.value.rcvd.reason
