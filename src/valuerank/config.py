"""Settings: environment variables with the `VALUERANK_` prefix, or a `.env` file."""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DATABASE_URL = "sqlite:///./valuerank.db"
DEFAULT_ORG_SLUG = "default"


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
    default_org: str = Field(
        default=DEFAULT_ORG_SLUG, description="Organisation used by the CLI on this install."
    )
    echo_sql: bool = False
    secret_key: SecretStr | None = Field(
        default=None,
        description="Encrypts stored provider API keys and webhook signing secrets: a Fernet key "
        "(`valuerank credentials keygen`) or a passphrase of at least 16 characters. Changing "
        "it makes stored secrets unreadable. Unset: provider keys come from the environment "
        "only, and webhooks cannot have a signing secret.",
    )
    api_token: SecretStr | None = Field(
        default=None,
        description="The access token of `valuerank serve` (Bearer header, or `/?token=` once "
        "in the browser). Unset: a random one is generated at each start and printed in the URL.",
    )


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
