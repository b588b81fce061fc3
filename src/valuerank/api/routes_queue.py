"""Routes of the API for queue (being written; see issue 10)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
