"""Storage: engine and connection factory, table definitions, Alembic migrations."""

from valuerank.db.engine import Database, create_database
from valuerank.db.url import DatabaseURL, normalize_database_url

__all__ = ["Database", "DatabaseURL", "create_database", "normalize_database_url"]
