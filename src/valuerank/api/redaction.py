"""Secrets kept out of the logs: `token=` query values (the `/?token=` jump) and API tokens
wherever they appear (uvicorn's access log writes the URL)."""

from __future__ import annotations

import logging
import re

from valuerank.accounts.hashing import TOKEN_PREFIX

_TOKEN_IN_QUERY = re.compile(r"(?i)([?&]token=)[^&\s\"']*")
# Our API tokens wherever they are (a token pasted into another parameter): the prefix
# makes them recognisable.
_API_TOKEN = re.compile(re.escape(TOKEN_PREFIX) + r"[A-Za-z0-9_-]{16,}")


def redact(text: str) -> str:
    """`…?token=abc&x=1` → `…?token=[redacted]&x=1`; any `vrt_…` API token → `vrt_[redacted]`."""
    return _API_TOKEN.sub(TOKEN_PREFIX + "[redacted]", _TOKEN_IN_QUERY.sub(r"\1[redacted]", text))


class RedactTokenFilter(logging.Filter):
    """Removes `token=` query values and API tokens from log records (uvicorn's access log
    has the URL)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        return True
