"""Pages of the UI for definitions (being written; see issue 13)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(include_in_schema=False)
