"""The documented shapes of the API's answers (see envelope.py)."""

from valuerank.api.schemas.envelope import (
    ERROR_RESPONSES,
    Debugged,
    Envelope,
    ErrorEnvelope,
    SuccessEnvelope,
    also,
    document_envelopes,
)

__all__ = [
    "ERROR_RESPONSES",
    "Debugged",
    "Envelope",
    "ErrorEnvelope",
    "SuccessEnvelope",
    "also",
    "document_envelopes",
]
