"""docs/api.md is the rendering of the routes as they are, and every route explains itself."""

from __future__ import annotations

from pathlib import Path

from valuerank.api.reference import reference_app, render, route_docs

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def test_the_committed_reference_is_current() -> None:
    fresh = render(reference_app())
    assert DOC.read_text("utf-8") == fresh, (
        "docs/api.md is stale: run `python -m valuerank.api.reference > docs/api.md`"
    )


def test_every_route_has_a_summary_and_every_api_route_a_role() -> None:
    docs = route_docs(reference_app())
    assert len(docs) >= 40
    assert [d for d in docs if not d.summary] == []
    opened = {f"{d.method} {d.path}" for d in docs if d.role == "open"}
    # Only these answer without credentials: liveness, signing in, the login and error pages.
    assert {p for p in opened if p.startswith(("GET /api", "POST /api", "WS"))} <= {
        "POST /api/auth/login",
        "GET /api/ready",
    }, opened
