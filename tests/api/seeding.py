"""One organisation holding something of every kind the API serves, made through the API as
its admin where the API can make it (the services otherwise: webhooks, caps, stored keys):
runs with transcripts, a paused variant run with queued jobs, a pending eval run, an
analysis, a comparison, an experiment, a rubric, a validation task with an RA tag and a
validation, a stored provider key, a webhook with a pending and a dead notification, an
organisation concurrency cap, a dead job (failed by a real worker), a member with a named
token, an invitation the organisation sent and one its member received.

Names carry `marker`, so a test can look for any trace of the organisation in an answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from valuerank.accounts import Role
from valuerank.credentials import set_credential
from valuerank.crypto import generate_key, optional_cipher
from valuerank.queue import JobSpec, QueueSettings, Worker, enqueue_many
from valuerank.queue.builtin import FAIL, register_builtin_handlers
from valuerank.queue.outbox import (
    deliver_due,
    enqueue_notifications,
    list_outbox,
    register_webhook,
)
from valuerank.queue.slots import ensure_org_caps
from valuerank.runs.service import cancel_run

from .conftest import Account, Live, make_demo_run

MODELS = ("scripted:utilitarian", "scripted:contrarian")
DECISIONS: dict[str, list[int | None]] = {
    "scripted:utilitarian": [1, 2, 5, 4],
    "scripted:contrarian": [5, 4, 1, 2],
}
UNREACHABLE = "http://127.0.0.1:9/hook"  # the discard port: every delivery fails at once
RUBRIC = "values:\n  Care:\n    definition: Caring.\n"


@dataclass
class Seeded:
    """The ids of what was made, by kind (the names the isolation test's tables use)."""

    account: Account
    marker: str
    ids: dict[str, str] = field(default_factory=dict)

    @property
    def traces(self) -> list[str]:
        """Strings only this organisation's data holds: its ids (not the numeric ones: task
        and validation numbers are found in any text), its own id, its member's email and
        the marker its names carry."""
        ids = [v for v in self.ids.values() if not v.isdecimal()]
        return [*ids, self.account.org_id, self.account.email, self.marker]


async def seed_organisation(live: Live, account: Account, marker: str) -> Seeded:
    seeded = Seeded(account, marker)
    ids = seeded.ids
    org = account.org_id
    db = live.db
    first = await make_demo_run(
        db, org, models=MODELS, decisions=DECISIONS, name=f"{marker} baseline"
    )
    second = await make_demo_run(db, org, models=MODELS, decisions=DECISIONS, name=f"{marker} b")
    ids["run"], ids["definition"] = first.id, str(first.definition_id)
    ids["second_run"] = second.id
    # A run that has ended (cancelled) with transcripts, for judging a run again.
    ended = await make_demo_run(db, org, models=MODELS, decisions=DECISIONS, name=f"{marker} e")
    async with db.transaction(immediate=True) as conn:
        await cancel_run(conn, org, ended.id)
    ids["ended_run"] = ended.id
    async with db.transaction(immediate=True) as conn:
        webhook = await register_webhook(conn, org, UNREACHABLE)
        ids["webhook"] = webhook.id
        [ids["notification"]] = await enqueue_notifications(conn, org, "task_failed", {"m": 1})
        await enqueue_notifications(conn, org, "run_complete", {"m": 2}, max_attempts=1)
        await set_credential(
            conn, org, "openai", f"sk-0123456789-{marker}", cipher=optional_cipher(generate_key())
        )
        await ensure_org_caps(conn, [org], 3)
    # A poison job, failed by a real worker (it runs only the built-in kinds: nothing else of
    # the seeding is queued yet), for the dead-job routes.
    async with db.transaction(immediate=True) as conn:
        [failing] = await enqueue_many(
            conn,
            [
                JobSpec(kind=FAIL, org_id=org, partition=f"ops-{marker}",
                        payload={"message": f"{marker} poison"}, max_attempts=1),
            ],
        )  # fmt: skip
    worker = register_builtin_handlers(Worker(db, settings=QueueSettings(poll_seconds=0.02)))
    await worker.run_until_idle()
    ids["failed_job"] = failing.job_id
    # The notification allowed one attempt dies on it; the other stays pending (retried later).
    await deliver_due(db, limit=10, timeout=2, org_id=org)
    async with db.transaction() as conn:
        [dead] = await list_outbox(conn, org, status="dead")
    ids["dead_notification"] = dead.id
    ids["org"] = org
    async with live.client(token=account.token) as client:

        async def made(method: str, url: str, body: object = None) -> dict[str, object]:
            response = await client.request(method, url, json=body)
            assert response.status_code < 300, f"{method} {url}: {response.text}"
            data: dict[str, object] = response.json()["data"]
            return data

        listed = await made("GET", f"/api/transcripts?run={first.id}")
        ids["transcript"] = str(listed["transcripts"][0]["id"])  # type: ignore[index]
        token = await made("POST", "/api/tokens", {"name": f"{marker} token"})
        ids["token"] = str(token["id"])
        ids["user"] = account.user_id
        compared = await made(
            "POST",
            "/api/runs/compare",
            {"baseline_run_id": first.id, "comparison_run_id": second.id},
        )
        ids["comparison"] = str(compared["comparison_id"])
        experiment = await made(
            "POST",
            "/api/experiments",
            {"name": f"{marker} experiment", "baseline_run_id": first.id},
        )
        ids["experiment"] = str(experiment["id"])
        variant = await made(
            "POST", f"/api/experiments/{ids['experiment']}/runs", {"changes": {"temperature": 0.5}}
        )
        ids["variant_run"] = str(variant["id"])
        await made("POST", f"/api/queue/runs/{ids['variant_run']}/pause")
        queued = await made(
            "POST", "/api/queue/runs", {"definition_id": ids["definition"], "models": [MODELS[0]]}
        )
        ids["queued_run"] = str(queued["id"])
        evaluation = await made(
            "POST",
            "/api/eval/runs",
            {"definition_id": ids["definition"], "models": [MODELS[0]], "name": f"{marker} e"},
        )
        ids["eval_run"] = str(evaluation["id"])
        await made("GET", f"/api/runs/{first.id}/analysis")
        rubric = await made("POST", "/api/rubrics", {"name": f"{marker} rubric", "yaml": RUBRIC})
        ids["rubric"] = str(rubric["id"])
        task = await made("POST", "/api/assumptions/tasks", {"name": f"{marker} task"})
        ids["task"] = str(task["id"])
        tag = await made(
            "POST",
            f"/api/assumptions/tasks/{ids['task']}/tags",
            {"text": f"#COMPLETION_DRIVE_IMPL: {marker} assumption"},
        )
        ids["tag"] = str(tag["id"])
        validator = (await made("GET", "/api/assumptions/models"))["models"][0]["id"]  # type: ignore[index]
        recorded = await made(
            "POST",
            f"/api/assumptions/tasks/{ids['task']}/tags/{ids['tag']}/validations",
            {"validator_id": validator, "outcome": "validated", "confidence": 90},
        )
        ids["validation"] = str(recorded["validation"]["id"])  # type: ignore[index]
        # An invitation the organisation sent (to another organisation's account), and one
        # its member received (from another organisation).
        invitee = await live.account(f"{marker}-elsewhere", Role.VIEWER)
        await made("POST", "/api/users", {"email": invitee.email, "role": "viewer"})
        sent = await made("GET", "/api/users/invitations")
        ids["invitation"] = str(sent["invitations"][0]["id"])  # type: ignore[index]
    inviter = await live.account(f"{marker}-inviter", Role.ADMIN)
    async with live.client(token=inviter.token) as other:
        invited = await other.post("/api/users", json={"email": account.email, "role": "viewer"})
        assert invited.status_code == 202, invited.text
    async with live.client(token=account.token) as client:
        received = (await client.get("/api/invitations")).json()["data"]["invitations"]
    ids["received_invitation"] = str(received[0]["id"])
    return seeded


async def shared_ids(live: Live) -> dict[str, str]:
    """Names of what every organisation shares: a validator model of the registry, a provider
    of the queue, one to store a key for, a maintenance pass (made by the install's admin),
    and a scenario of the demo definition every seeded run holds (the same sample seed)."""
    async with live.client() as admin:
        models = (await admin.get("/api/assumptions/models")).json()["data"]["models"]
        listed = (await admin.get("/api/transcripts", params={"limit": 1})).json()["data"]
        maintenance = await admin.post("/api/system/queue/maintenance/run")
        assert maintenance.status_code == 200, maintenance.text
    return {
        "validator": next(m["id"] for m in models if m["provider"] == "scripted"),
        "provider": "scripted",
        "credential_provider": "openai",
        "maintenance_run": maintenance.json()["data"]["id"],
        "scenario": listed["transcripts"][0]["scenario_id"],
    }
