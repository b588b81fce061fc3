"""Settings: environment variables with the `VALUERANK_` prefix, or a `.env` file."""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Any

from pydantic import Field, SecretStr, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

DEFAULT_DATABASE_URL = "sqlite:///./valuerank.db"
DEFAULT_ORG_SLUG = "default"
# A process's PostgreSQL pool: connections kept, and opened beyond them while busy (each closed
# when returned, so a process often busier than its pool opens a backend per request: with 16
# clients an API process answered 424 uncached reads a second at 5 + 10, 490 at 12 + 3).
# 12 + 3 and the LISTEN connection: 16 at the most, as SQLAlchemy's 5 + 10 were.
DEFAULT_POOL_SIZE = 12
DEFAULT_POOL_OVERFLOW = 3


class Settings(BaseSettings):
    """Process-wide settings; read once, passed down explicitly."""

    model_config = SettingsConfigDict(
        env_prefix="VALUERANK_", env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

    database_url: str = Field(
        default=DEFAULT_DATABASE_URL,
        description="sqlite:///path (embedded default) or postgresql://user@host/db.",
    )
    sqlite_busy_timeout_ms: int = Field(
        default=30_000,
        ge=0,
        description="How long SQLite waits for a lock before failing (workers share one file).",
    )
    db_pool_size: int = Field(
        default=DEFAULT_POOL_SIZE,
        ge=1,
        description="PostgreSQL connections each process keeps open (its SQLAlchemy pool).",
    )
    db_pool_overflow: int = Field(
        default=DEFAULT_POOL_OVERFLOW,
        ge=0,
        description="Connections a process may open beyond the pool while busy "
        "(closed when returned).",
    )
    db_fast_paths: bool = Field(
        default=True,
        description="SQLite's one-hop driver (one thread round trip per statement) and upserts "
        "compiled once: both rest on private APIs of aiosqlite and SQLAlchemy (pinned, and "
        "checked by tests/db/test_private_apis.py). false: the libraries' stock paths, slower "
        "(see docs/benchmarks.md), for a release of either library those checks refuse.",
    )
    default_org: str = Field(
        default=DEFAULT_ORG_SLUG, description="Organisation used by the CLI on this install."
    )
    echo_sql: bool = False
    api_url: str | None = Field(
        default=None,
        description="A ValueRank server (what `valuerank serve` prints, e.g. "
        "https://valuerank.example.org): every command that reads or writes data, and "
        "`valuerank mcp`, ask it over the API instead of the database; the commands that "
        "administer the install (db, worker, serve, maintenance…) say that they still use "
        "VALUERANK_DATABASE_URL.",
    )
    api_token: SecretStr | None = Field(
        default=None,
        description="The API token (`valuerank tokens create`) sent to VALUERANK_API_URL; it "
        "chooses the organisation. Unset: none is sent.",
    )
    secret_key: SecretStr | None = Field(
        default=None,
        description="Encrypts stored provider API keys and webhook signing secrets: a Fernet key "
        "(`valuerank credentials keygen`) or a passphrase of at least 16 characters. Changing "
        "it makes stored secrets unreadable. Unset on an embedded SQLite database: provider "
        "keys are encrypted with a key file created beside it (`<database>.secret-key`, 0600). "
        "Unset on PostgreSQL: provider keys come from the environment only. Webhooks cannot "
        "have a signing secret without it.",
    )
    # --- Who may use `valuerank serve` (see docs/access.md) ---
    auto_login: bool = Field(
        default=False,
        description="Log requests from this machine (loopback clients, loopback Host header, "
        "no forwarding header) in as the local admin of the default organisation, created on "
        "demand. Refused when the server binds a non-loopback address.",
    )
    public_read_prefixes: Annotated[tuple[str, ...], NoDecode] = Field(
        default=(),
        description="Comma-separated path prefixes whose GET/HEAD requests (and WebSockets) "
        "need no authentication: they act as an anonymous viewer of the default organisation. "
        "e.g. `/api/assumptions/,/ws/updates` opens the multi-model validation API's reads.",
    )
    session_ttl_hours: float = Field(
        default=24.0, gt=0, description="How long a browser session lasts after its login."
    )
    metrics_token: SecretStr | None = Field(
        default=None,
        description="A secret (16+ characters, e.g. `openssl rand -hex 32`) that Prometheus "
        "sends as `Authorization: Bearer …` to read /metrics, which counts every "
        "organisation's jobs. Unset: only admins of the default organisation read /metrics.",
    )
    rate_limits_enabled: bool = Field(
        default=True, description="Limit requests per client and endpoint class (429)."
    )
    rate_limit_standard: str = Field(
        default="100/minute", description="Requests per client to any other endpoint."
    )
    rate_limit_multi_model: str = Field(
        default="50/minute",
        description="Requests per client to /api/assumptions/multi-model/ and …/consensus/.",
    )
    rate_limit_models: str = Field(
        default="200/minute",
        description="Requests per client to /api/assumptions/models and /api/models.",
    )
    rate_limit_login: str = Field(
        default="5/minute",
        description="Failed logins allowed per account and per client address.",
    )
    forwarded_allow_ips: str = Field(
        default="",
        description="Comma-separated addresses (or `*`) of the proxies whose `X-Forwarded-For` "
        "and `X-Forwarded-Proto` are believed: the client address that rate limits count and "
        "the scheme that marks cookies Secure. Empty: no forwarding header is believed, from "
        "any client, loopback included.",
    )
    redis_url: SecretStr | None = Field(
        default=None,
        description="redis://[:password@]host:port/db: rate-limit counters shared by every "
        "API process. Unset: counted in each process's memory.",
    )
    rate_limit_key_prefix: str = Field(
        default="valuerank",
        min_length=1,
        max_length=64,
        description="Prefix of the rate-limit keys in Redis (installs sharing one Redis).",
    )

    @field_validator("public_read_prefixes", mode="before")
    @classmethod
    def _split_prefixes(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("public_read_prefixes")
    @classmethod
    def _absolute_prefixes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for prefix in value:
            if not prefix.startswith("/") or prefix == "/":
                raise ValueError(
                    f"{prefix!r}: a public-read prefix is a path below the root, "
                    "e.g. /api/assumptions/"
                )
        return value

    @field_validator(
        "rate_limit_standard", "rate_limit_multi_model", "rate_limit_models", "rate_limit_login"
    )
    @classmethod
    def _rate(cls, value: str, info: ValidationInfo) -> str:
        # A default is a known rate: `limits` loads its storages (~50 ms, more than 100 on a
        # busy machine), and every command builds the settings; only a configured rate needs
        # it. Here, not with the module, for the same reason.
        if info.field_name and value == cls.model_fields[info.field_name].default:
            return value
        import limits

        try:
            limits.parse(value)
        except ValueError:
            raise ValueError(
                f"{value!r} is not a rate: write e.g. 100/minute, 10/second or 1000 per hour"
            ) from None
        return value

    validation_cache_seconds: float = Field(
        default=300.0,
        ge=0,
        description="How long the API caches a consensus read of the validation API (the "
        "multi-model view, a task's consensus); a new validation invalidates it at once. "
        "0 turns the cache off.",
    )
    token_cache_seconds: float = Field(
        default=30.0,
        ge=0,
        description="How long an API process keeps an API token's identity after reading it, "
        "on PostgreSQL only: a revocation, a role change or a removal still takes effect at "
        "once in every process (triggers NOTIFY them, and the cache is bypassed while its "
        "listener is disconnected). 0 reads the token from the database on every request.",
    )
    response_cache_days: float = Field(
        default=90.0,
        ge=0,
        description="Cached model answers (what runs with --reuse-cache reuse) older than this "
        "are deleted by maintenance, counted from when each was first cached; 0 keeps them.",
    )
    transcript_retention_days: float = Field(
        default=0.0,
        ge=0,
        description="Transcripts of runs finished longer ago than this are exported (the run's "
        "ZIP in the original CLI's layout) into VALUERANK_TRANSCRIPT_EXPORT_DIR by maintenance, "
        "then deleted (their judgments with them; the run's counts and results stay). Nothing "
        "is deleted if the export fails or no folder is set. 0 (the default) keeps them.",
    )
    transcript_export_dir: str | None = Field(
        default=None,
        description="Where transcript retention writes the runs' ZIPs before deleting their "
        "transcripts (one folder per organisation id).",
    )
    webhook_private_targets: bool = Field(
        default=False,
        description="Let webhooks registered over the API (POST /api/webhooks) point at "
        "loopback, private or link-local addresses. Off: an organisation's admin cannot make "
        "the install's workers call its internal services.",
    )
    max_upload_bytes: int = Field(
        default=50 * 1024 * 1024,
        ge=1024,
        description="Largest request body accepted by the upload routes (POST /api/import, "
        "/api/definitions/import, /api/rubrics/import); every other route accepts 1 MiB.",
    )


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
