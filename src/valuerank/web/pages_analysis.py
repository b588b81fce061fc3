"""Pages of the UI for analysis (being written; see issue 13)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(include_in_schema=False)
