"""A value the database refused (a driver's DataError): the input's fault, never an outage.

PostgreSQL stores no NUL character in text and no number past its column's range; the API's
and the CLI's inputs are checked before they get there, and whatever still slips through is
reported as bad input (422 INVALID_INPUT) without echoing the value, which may be a secret.
"""

from __future__ import annotations

from sqlalchemy.exc import DataError

CODE = "INVALID_INPUT"
HINT = "text cannot hold a NUL character, and a number must fit its field"


def refused_value_message(exc: DataError) -> str:
    """What was wrong with the value, in the driver's words only where they echo nothing."""
    reason = str(exc.orig if exc.orig is not None else exc)
    if "NUL" in reason or "\\x00" in reason or "0x00" in reason:
        return "the database refused a value: text holds a NUL character"
    if "out of range" in reason or "too large" in reason:
        return "the database refused a value: a number is out of range"
    return "the database refused a value of this request"
