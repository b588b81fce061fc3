"""docs/notebooks.md runs: its Python blocks, in order and in one namespace, as a notebook
would run them, against a database holding one completed, judged run of scripted models."""

from __future__ import annotations

import asyncio
import contextlib
import io
from typing import Any

import pytest
from tests.conftest import TestDatabase
from tests.docs.doc_parsing import DOCS, fenced_blocks
from tests.sdk.conftest import completed

from valuerank.config import get_settings

__all__ = ["completed"]

PAGE = DOCS / "notebooks.md"


def _python_blocks() -> list[str]:
    return [
        "\n".join(line for _, line in block.lines)
        for block in fenced_blocks(PAGE)
        if block.language == "python"
    ]


def test_the_page_has_its_walk_through() -> None:
    assert len(_python_blocks()) >= 4


async def test_the_notebook_example_runs(
    database_url: TestDatabase, completed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VALUERANK_DATABASE_URL", database_url.url)
    get_settings.cache_clear()
    namespace: dict[str, object] = {}
    printed = io.StringIO()

    def _run() -> None:
        with contextlib.redirect_stdout(printed):
            for number, code in enumerate(_python_blocks(), start=1):
                exec(compile(code, f"{PAGE.name}[python block {number}]", "exec"), namespace)

    try:
        await asyncio.to_thread(_run)
    finally:
        get_settings.cache_clear()
    out = printed.getvalue()
    assert "completed" in out and "scripted:utilitarian" in out
    decisions: Any = namespace["decisions"]
    assert len(decisions) > 0 and "dim.Harm" in decisions.columns
    sensitivity: Any = namespace["sensitivity"]
    assert set(sensitivity["name"]) == {"Cost", "Harm", "Tenure"}
    assert set(sensitivity["model"]) == {"scripted:utilitarian", "scripted:contrarian"}
