"""POST /api/definitions/validate on SQLite and PostgreSQL: a file checked without being
stored — valid, a parse error and a matching-rule error with their lines, bad bodies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

DEMO_TEXT = (Path(__file__).parents[2] / "src/valuerank/demo/exp-demo-whistleblower.md").read_text()


async def test_a_file_is_checked_not_stored(live: Any, assert_error: Any) -> None:
    async with live.client_for("default", "viewer") as viewer:
        good = await viewer.post("/api/definitions/validate", json={"markdown": DEMO_TEXT})
        assert good.status_code == 200, good.text
        assert good.json()["data"] == {
            "valid": True,
            "name": "exp-demo-whistleblower",
            "dimensions": ["Tenure", "Harm", "Cost"],
            "error": None,
        }

        typo = DEMO_TEXT.replace("[Harm]", "[Harmm]", 1)
        line = typo.splitlines().index(next(x for x in typo.splitlines() if "[Harmm]" in x)) + 1
        bad = (await viewer.post("/api/definitions/validate", json={"markdown": typo})).json()
        assert bad["data"]["valid"] is False and bad["data"]["name"] is None
        error = bad["data"]["error"]
        assert error["line"] == line and "[Harmm]" in error["message"] and error["hint"]

        rules = DEMO_TEXT + "\n# Matching Rules\n\nNope.score > 1\n"
        ruled = (await viewer.post("/api/definitions/validate", json={"markdown": rules})).json()
        assert ruled["data"]["valid"] is False and ruled["data"]["error"]["column"] == 1
        assert ruled["data"]["error"]["line"] == len(rules.rstrip("\n").splitlines())

        listed = (await viewer.get("/api/definitions")).json()["data"]["definitions"]
        assert listed == []  # nothing was stored

        for body in ({}, {"markdown": ""}, {"markdown": DEMO_TEXT, "extra": 1}, {"markdown": 3}):
            assert_error(
                await viewer.post("/api/definitions/validate", json=body), 422, "VALIDATION_ERROR"
            )
