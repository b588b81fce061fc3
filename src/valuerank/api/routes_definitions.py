"""Routes of the API for definitions (being written; see issue 10)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
