"""The settings that decide who gets in without credentials: auto-login, public reads, the
metrics scraper's token, and how long a browser session lasts."""

from __future__ import annotations

from dataclasses import dataclass, field

from valuerank.accounts.hashing import digest, same_secret
from valuerank.config import Settings
from valuerank.errors import InvalidInputError

METRICS_PATH = "/metrics"
MIN_METRICS_TOKEN_LENGTH = 16


@dataclass(frozen=True)
class AccessPolicy:
    """The settings that decide who gets in without credentials."""

    auto_login: bool
    public_read_prefixes: tuple[str, ...]
    session_seconds: int
    # The SHA-256 of VALUERANK_METRICS_TOKEN: the token itself is kept nowhere (no repr).
    metrics_token_digest: str | None = field(default=None, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings) -> AccessPolicy:
        metrics = settings.metrics_token.get_secret_value() if settings.metrics_token else None
        if metrics is not None and len(metrics.strip()) < MIN_METRICS_TOKEN_LENGTH:
            raise InvalidInputError(  # never repeats the value
                f"VALUERANK_METRICS_TOKEN is shorter than {MIN_METRICS_TOKEN_LENGTH} characters",
                hint="use a random secret, e.g. `openssl rand -hex 32`",
            )
        return cls(
            settings.auto_login,
            settings.public_read_prefixes,
            int(settings.session_ttl_hours * 3600),
            digest(metrics) if metrics is not None else None,
        )

    def metrics_scraper(self, method: str, path: str, bearer: str | None) -> bool:
        """A read of /metrics with the metrics token (compared by digest, in constant time)."""
        if bearer is None or self.metrics_token_digest is None:
            return False
        if method not in ("GET", "HEAD") or path != METRICS_PATH:
            return False
        return same_secret(digest(bearer), self.metrics_token_digest)

    def public_read(self, method: str, path: str) -> bool:
        """A read of a path at or below one of the prefixes (whole path segments only:
        `/api/runs` opens `/api/runs/x`, not `/api/runsx`)."""
        return method in ("GET", "HEAD") and any(
            path == prefix.rstrip("/") or path.startswith(prefix.rstrip("/") + "/")
            for prefix in self.public_read_prefixes
        )
