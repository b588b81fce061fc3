"""People as judges through the API, on SQLite and PostgreSQL: a member records, reads and
deletes their reading of a transcript; bad value names are 422 with a code and write nothing;
a viewer cannot write; another organisation's transcript or run is 404; the read-next queue
walks the run in a fixed order per person; the analysis compares the judges with the person
(`judgeAgreement.withPeople`) and never counts the person among the judges."""

from __future__ import annotations

from typing import Any

from tests.readings_seeding import FREEDOM, JUDGES, LOYALTY, judged_run

from valuerank.accounts import Role

from .conftest import Live

READINGS = "/api/transcripts/{}/readings"


async def test_a_reading_round_trips_and_reaches_the_analysis(
    live: Live, assert_error: Any
) -> None:
    seeded = await judged_run(live.db, live.org_id)
    first = seeded.transcript_ids[0]
    async with live.client_for("default", Role.MEMBER) as client:
        email = client.account.email  # type: ignore[attr-defined]
        posted = await client.post(
            READINGS.format(first),
            json={"prioritized_values": [LOYALTY], "deprioritized_values": [FREEDOM]},
        )
        assert posted.status_code == 201, posted.text
        reading = posted.json()["data"]
        assert reading["reader"] == f"human:{email}"
        assert reading["prioritized_values"] == [LOYALTY]
        listed = (await client.get(READINGS.format(first))).json()["data"]
        assert [r["reader"] for r in listed["readings"]] == [f"human:{email}"]
        assert FREEDOM in listed["values"] and listed["run_id"] == seeded.run.id
        # Again: replaced, not added.
        again = await client.post(
            READINGS.format(first), json={"prioritized_values": [FREEDOM], "note": "clear"}
        )
        assert again.status_code == 201
        listed = (await client.get(READINGS.format(first))).json()["data"]["readings"]
        assert len(listed) == 1 and listed[0]["prioritized_values"] == [FREEDOM]
        assert listed[0]["deprioritized_values"] == [] and listed[0]["note"] == "clear"
        # The judges' readings of the transcript are untouched.
        shown = (await client.get(f"/api/transcripts/{first}")).json()["data"]
        assert sorted(j["judge_model"] for j in shown["judgments"]) == sorted(JUDGES)
        analysis = (await client.get(f"/api/runs/{seeded.run.id}/analysis")).json()["data"]
    agreement = analysis["judgeAgreement"]
    assert agreement["judges"] == sorted(JUDGES)
    assert agreement["people"] == [f"human:{email}"]
    for judge in JUDGES:
        versus = agreement["withPeople"][judge]
        assert versus["transcripts"] == 1
        assert versus["values"][FREEDOM]["n"] == 1
    assert set(agreement["withConsensus"]) == set(JUDGES)
    assert agreement["values"][FREEDOM]["alpha"]["value"] is not None


async def test_bad_value_names_are_refused_and_write_nothing(live: Live, assert_error: Any) -> None:
    seeded = await judged_run(live.db, live.org_id)
    url = READINGS.format(seeded.transcript_ids[0])
    async with live.client_for("default", Role.MEMBER) as client:
        unknown = await client.post(url, json={"prioritized_values": ["Honesty", FREEDOM]})
        body = assert_error(unknown, 422, "UNKNOWN_VALUE")
        assert "Honesty" in body["error"] and FREEDOM in body["hint"]
        both = await client.post(
            url, json={"prioritized_values": [FREEDOM], "deprioritized_values": [FREEDOM]}
        )
        assert_error(both, 422, "CONFLICTING_VALUES")
        malformed = await client.post(url, json={"prioritized_values": "Freedom"})
        assert_error(malformed, 422, "VALIDATION_ERROR")
        assert (await client.get(url)).json()["data"]["readings"] == []
        assert_error(await client.delete(url), 404, "READING_NOT_FOUND")


async def test_roles_and_organisations(live: Live, assert_error: Any) -> None:
    seeded = await judged_run(live.db, live.org_id)
    url = READINGS.format(seeded.transcript_ids[0])
    body = {"prioritized_values": [FREEDOM]}
    async with live.client_for("default", Role.VIEWER) as viewer:
        assert (await viewer.get(url)).status_code == 200
        assert_error(await viewer.post(url, json=body), 403, "FORBIDDEN")
        assert_error(await viewer.delete(url), 403, "FORBIDDEN")
        assert_error(await viewer.get(f"/api/runs/{seeded.run.id}/read-next"), 403, "FORBIDDEN")
    async with live.client_for("other", Role.ADMIN) as stranger:
        assert_error(await stranger.get(url), 404, "TRANSCRIPT_NOT_FOUND")
        assert_error(await stranger.post(url, json=body), 404, "TRANSCRIPT_NOT_FOUND")
        assert_error(await stranger.delete(url), 404, "TRANSCRIPT_NOT_FOUND")
        assert_error(await stranger.get(f"/api/runs/{seeded.run.id}/read-next"), 404, "NOT_FOUND")
    async with live.client_for("default", Role.MEMBER) as member:
        assert (await member.post(url, json=body)).status_code == 201
        deleted = await member.delete(url)
        assert deleted.status_code == 200 and deleted.json()["data"]["deleted"] is True
        assert (await member.get(url)).json()["data"]["readings"] == []


async def test_the_read_next_queue_is_a_fixed_order_per_person(live: Live) -> None:
    seeded = await judged_run(live.db, live.org_id)
    total = len(seeded.transcript_ids)
    async with (
        live.client_for("default", Role.MEMBER) as ann,
        live.client_for("default", Role.MEMBER) as bob,
    ):
        queue = f"/api/runs/{seeded.run.id}/read-next"
        seen: list[str] = []
        for n in range(total):
            state = (await ann.get(queue)).json()["data"]
            assert state["read"] == n and state["total"] == total
            assert (await ann.get(queue)).json()["data"] == state  # reproducible
            seen.append(state["next_transcript_id"])
            posted = await ann.post(READINGS.format(seen[-1]), json={})
            assert posted.status_code == 201
        assert sorted(seen) == sorted(seeded.transcript_ids)
        done = (await ann.get(queue)).json()["data"]
        assert done == {
            "run_id": seeded.run.id,
            "next_transcript_id": None,
            "read": total,
            "total": total,
        }
        # Another person starts elsewhere in their own order, from nothing read.
        theirs = (await bob.get(queue)).json()["data"]
        assert theirs["read"] == 0
        bob_order: list[str] = []
        for _ in range(total):
            state = (await bob.get(queue)).json()["data"]
            bob_order.append(state["next_transcript_id"])
            await bob.post(READINGS.format(bob_order[-1]), json={})
        assert bob_order != seen
