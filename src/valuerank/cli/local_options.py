"""Options that only work on the database: with VALUERANK_API_URL set, such an option is
refused (LOCAL_ONLY_OPTION) rather than quietly ignored or done on a database."""

from __future__ import annotations

from typing import NoReturn

from valuerank.cli.common import fail
from valuerank.client import ApiClient

CODE = "LOCAL_ONLY_OPTION"


def refuse_option(
    server: ApiClient, option: str, why: str, *, hint: str, as_json: bool
) -> NoReturn:
    """Exit 1: `option` cannot be done through `server` (`why`), and `hint` says what to do."""
    fail(
        f"{option} {why}: it cannot be done through the server at {server.base_url} "
        "(VALUERANK_API_URL)",
        code=CODE,
        hint=hint,
        as_json=as_json,
    )
