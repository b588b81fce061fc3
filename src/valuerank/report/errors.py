"""What can stop a report."""

from __future__ import annotations

from valuerank.errors import ValueRankError


class NoTranscriptsError(ValueRankError):
    """A run without transcripts has no figures to report."""

    code = "NO_TRANSCRIPTS"
    http_status = 409
