"""A ValueRank server seen from outside: a small client of its JSON API.

The CLI asks a server through it when `VALUERANK_API_URL` is set. It uses the standard library
only (urllib), so a command answered by a server starts without the database stack, the
settings' validation or Typer: see `valuerank.entry`.
"""

from valuerank.client.api import API_TOKEN_ENV, API_URL_ENV, ApiClient, ApiError

__all__ = ["API_TOKEN_ENV", "API_URL_ENV", "ApiClient", "ApiError"]
