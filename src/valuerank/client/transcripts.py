"""People's readings of transcripts, asked of a server: `valuerank transcripts read|readings|
unread|read-next` when VALUERANK_API_URL is set. The reader is the token's user: the API
records a reading as whoever signed in, never as another member."""

from __future__ import annotations

from typing import Any

from valuerank.client.api import ApiClient, segment


def _readings_path(transcript: str) -> str:
    return f"/api/transcripts/{segment(transcript)}/readings"


def record_reading(
    client: ApiClient,
    transcript: str,
    prioritized: list[str],
    deprioritized: list[str],
    note: str,
) -> dict[str, Any]:
    """POST /api/transcripts/{id}/readings: the reading recorded (replacing an earlier one)."""
    body = {
        "prioritized_values": list(prioritized),
        "deprioritized_values": list(deprioritized),
        "note": note,
    }
    data: dict[str, Any] = client.post(_readings_path(transcript), body)
    return data


def list_readings(client: ApiClient, transcript: str) -> dict[str, Any]:
    """GET /api/transcripts/{id}/readings: the transcript's run, its rubric and the values a
    reading may name, and people's readings."""
    data: dict[str, Any] = client.get(_readings_path(transcript))
    return data


def delete_reading(client: ApiClient, transcript: str) -> dict[str, Any]:
    """DELETE /api/transcripts/{id}/readings: `{"deleted", "transcript_id"}`."""
    data: dict[str, Any] = client.delete(_readings_path(transcript))
    return data


def next_unread(client: ApiClient, run: str) -> dict[str, Any]:
    """GET /api/runs/{id}/read-next: the next transcript to read, how many are read."""
    data: dict[str, Any] = client.get(f"/api/runs/{segment(run)}/read-next")
    return data
