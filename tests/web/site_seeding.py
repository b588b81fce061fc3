"""One organisation holding everything each page of the site shows, for the every-page
browser test: runs (judged by a real worker, with transcripts of three models, a failed one
whose jobs died, a matrix run), a stored comparison, an experiment, a forked definition, a
validation task, the model registry, a second member and token; and a password user who
also belongs to a second organisation, so the header shows the organisation switcher."""

from __future__ import annotations

from dataclasses import dataclass

from tests.matrix_seeding import seed_matrix_run

from valuerank.accounts import Role, add_member, create_token
from valuerank.consensus.consensus import Outcome
from valuerank.db import Database
from valuerank.definitions import service
from valuerank.findings.comparisons import compare_runs
from valuerank.formats import parse_definition
from valuerank.orgs import ensure_org
from valuerank.pipeline.experiments import add_variant, create_experiment
from valuerank.registry import upsert_model
from valuerank.registry.service import seed_models
from valuerank.runs.transcripts import TranscriptFilter, list_transcripts
from valuerank.validation.store import NewValidation, add_tag, create_task, record_validation

from .conftest import DEMO
from .test_analysis_pages import seeded
from .test_login_pages import PASSWORD, make_user
from .test_queue_pages import broken_run
from .test_runs_pages import judged_run

EMAIL = "ada@example.test"
# A long registry id: it wraps after its ':' and '/', each part (which fits a phone's line)
# whole.
LONG_MODEL = "openrouter:meta-llama/llama-3.1-405b-instruct"


@dataclass(frozen=True)
class Credentials:
    email: str
    password: str


async def seed_site(db: Database, org_id: str) -> tuple[dict[str, str], Credentials]:
    """The default organisation seeded; returns page name -> path, and how to sign in."""
    await make_user(db, org_id, EMAIL)  # admin here, viewer of a second organisation "lab"
    judged = await judged_run(db, org_id)
    baseline = await seeded(db, org_id, "baseline run")
    shifted = await seeded(db, org_id, "shifted run", shift=2)
    matrix = await seed_matrix_run(db, org_id, name="matrix run")
    failed = await broken_run(db, org_id, "broken run")
    stored = (await compare_runs(db, org_id, baseline.id, shifted.id)).comparison

    async with db.transaction() as conn:
        await seed_models(conn)
        await upsert_model(conn, LONG_MODEL, display_name="Llama long context", weight=1.0)
        viewer = await add_member(conn, org_id, "viewer@example.test", Role.VIEWER)
        await create_token(conn, org_id, viewer.user.id, name="viewer's laptop")

        assert baseline.definition_id is not None
        root = (await service.get_definition(conn, org_id, baseline.definition_id)).version
        text = DEMO.read_text()
        changed = text.replace("I work as an engineer", "I work as a senior engineer", 1).replace(
            "| 2 | five years | five years |", "| 2 | a decade | ten years |", 1
        )
        child = await service.fork_definition(
            conn, org_id, root.id, definition=parse_definition(changed)
        )

        experiment = await create_experiment(
            conn,
            org_id,
            name="more models",
            hypothesis="a centrist agrees",
            baseline_run=baseline.id,
        )
        await add_variant(
            conn, org_id, experiment.id, {"models": ["scripted:centrist"]}, start=False
        )

        for model in ("openai:gpt-4o-mini", "anthropic:claude-3-5-haiku-latest"):
            await upsert_model(conn, model, display_name=model, weight=1.0)
        task = await create_task(conn, org_id, "Authentication API", "RA tags of a change")
        tag, _ = await add_tag(conn, org_id, task.id, "#SUGGEST: add rate limiting", None)
        for model, outcome in (
            ("openai:gpt-4o-mini", Outcome.VALIDATED),
            ("anthropic:claude-3-5-haiku-latest", Outcome.REJECTED),
        ):
            await record_validation(
                conn, org_id, task.id, tag.id, NewValidation(model, outcome, 0.8, "a note")
            )

        [transcript, *_] = await list_transcripts(conn, org_id, TranscriptFilter(run=judged.id))
        [answer, *_] = await list_transcripts(conn, org_id, TranscriptFilter(run=matrix.id))
        await ensure_org(conn, "lab", name="Lab")

    pages = {
        "runs": "/",
        "new-run": "/runs/new",
        "run": f"/runs/{judged.id}",
        "run-failed": f"/runs/{failed}",
        "analysis": f"/runs/{baseline.id}/analysis",
        "analysis-judged": f"/runs/{judged.id}/analysis",
        "matrix": f"/runs/{matrix.id}/matrix",
        "scenario-answers": f"/runs/{matrix.id}/scenarios/{answer['scenario_id']}",
        "transcripts": "/transcripts",
        "transcript": f"/transcripts/{transcript['id']}",
        "read-transcript": f"/transcripts/{transcript['id']}/read",
        "read-sample": f"/runs/{judged.id}/read",
        "definitions": "/definitions",
        "definition": f"/definitions/{child.version.id}",
        "definition-edit": f"/definitions/{child.version.id}/edit",
        "definition-new": "/definitions/new",
        "definition-diff": f"/definitions/{child.version.id}/diff",
        "compare": "/compare",
        "compare-now": f"/compare?baseline={baseline.id}&comparison={shifted.id}",
        "comparison": f"/compare/comparisons/{stored.id}",
        "experiment": f"/compare/experiments/{experiment.id}",
        "lineage": f"/compare/lineage/{root.id}",
        "leaderboard": f"/definitions/{root.id}/leaderboard",
        "queue": "/queue",
        "validation": "/validation",
        "validation-task": f"/validation/{task.id}",
        "settings": "/settings",
        "exchange": "/exchange",
    }
    return pages, Credentials(EMAIL, PASSWORD)
