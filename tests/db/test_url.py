import pytest

from valuerank.db.url import DatabaseURLError, normalize_database_url


@pytest.mark.parametrize(
    ("raw", "driver", "dialect"),
    [
        ("sqlite:///./valuerank.db", "sqlite+aiosqlite", "sqlite"),
        ("sqlite+aiosqlite:///x.db", "sqlite+aiosqlite", "sqlite"),
        ("sqlite+pysqlite:///x.db", "sqlite+aiosqlite", "sqlite"),
        ("postgresql://u@h:5432/db", "postgresql+psycopg", "postgresql"),
        ("postgres://u@h/db", "postgresql+psycopg", "postgresql"),
        ("postgresql+psycopg://u@h/db", "postgresql+psycopg", "postgresql"),
        ("postgresql+psycopg2://u@h/db", "postgresql+psycopg", "postgresql"),
    ],
)
def test_driver_is_chosen_internally(raw: str, driver: str, dialect: str) -> None:
    url = normalize_database_url(raw)
    assert url.url.drivername == driver
    assert url.dialect == dialect


def test_rest_of_the_url_is_kept_and_password_hidden() -> None:
    url = normalize_database_url("postgresql://bob:s3cret@db.example:6543/vr?sslmode=require")
    assert url.url.host == "db.example"
    assert url.url.port == 6543
    assert url.url.database == "vr"
    assert url.url.query["sslmode"] == "require"
    assert "s3cret" not in url.render()


def test_sqlite_path() -> None:
    assert normalize_database_url("sqlite:///data/vr.db").sqlite_path == "data/vr.db"
    assert normalize_database_url("sqlite://").sqlite_path is None


@pytest.mark.parametrize("raw", ["mysql://u@h/db", "not a url"])
def test_unsupported_or_malformed_urls_say_what_works(raw: str) -> None:
    with pytest.raises(DatabaseURLError, match="sqlite:///"):
        normalize_database_url(raw)
