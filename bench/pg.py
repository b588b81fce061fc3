"""PostgreSQL helpers of the benchmarks: a fresh schema per system, and a meter of the jobs in
flight that the database itself keeps.

The meter counts the rows of a job table in a system's "in flight" status (ours `running`,
procrastinate `doing`, PgQueuer `picked`): claimed and not yet recorded as done, so a job whose
completion is still being written counts. Statement-level triggers add what each statement moved
into that status and subtract what it moved out (or deleted) to one counter row, and keep its
peak. The counter row is locked until the transaction commits, so its values follow commit
order and the peak is the most jobs ever in flight at once as committed. It serialises the
writers on one row: the benchmarks measure with it in an untimed pass only.
"""

from __future__ import annotations

import uuid
from urllib.parse import quote

import psycopg

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"


def libpq(url: str) -> str:
    """A SQLAlchemy-style URL (postgresql+asyncpg://…) as a libpq conninfo."""
    scheme, rest = url.split("://", 1)
    return "postgresql://" + rest if scheme.startswith("postgres") else url


class Schema:
    """A fresh schema for one system; URL/conninfo with its search_path. Dropped on exit."""

    def __init__(self, base_url: str, system: str) -> None:
        self.base = libpq(base_url)
        self.name = f"bench_{system}_{uuid.uuid4().hex[:8]}"
        sep = "&" if "?" in self.base else "?"
        self.url = f"{self.base}{sep}options={quote(f'-csearch_path={self.name}')}"

    def __enter__(self) -> Schema:
        with psycopg.connect(self.base, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{self.name}"')
        return self

    def __exit__(self, *exc: object) -> None:
        with psycopg.connect(self.base, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{self.name}" CASCADE')


_METER_SQL = """
CREATE TABLE bench_in_flight (n integer NOT NULL, peak integer NOT NULL);
INSERT INTO bench_in_flight VALUES (0, 0);
CREATE FUNCTION bench_in_flight_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE delta integer;
BEGIN
  SELECT (SELECT count(*) FROM new_rows WHERE status::text = TG_ARGV[0])
       - (SELECT count(*) FROM old_rows WHERE status::text = TG_ARGV[0]) INTO delta;
  IF delta <> 0 THEN
    UPDATE bench_in_flight SET n = n + delta, peak = greatest(peak, n + delta);
  END IF;
  RETURN NULL;
END $$;
CREATE FUNCTION bench_in_flight_delete() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE gone integer;
BEGIN
  SELECT count(*) FROM old_rows WHERE status::text = TG_ARGV[0] INTO gone;
  IF gone <> 0 THEN
    UPDATE bench_in_flight SET n = n - gone;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER bench_in_flight_u AFTER UPDATE ON {table}
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bench_in_flight_update('{status}');
CREATE TRIGGER bench_in_flight_d AFTER DELETE ON {table}
  REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bench_in_flight_delete('{status}');
"""


def install_in_flight_meter(conninfo: str, table: str, status: str) -> None:
    """Count the rows of `table` whose status is `status` (see the module doc). Rows are
    expected to be inserted in another status (queued), as every system here does."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(_METER_SQL.format(table=table, status=status).encode())


def in_flight_peak(conninfo: str) -> int:
    """The most rows in flight at once since the meter was installed."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute("SELECT peak FROM bench_in_flight").fetchone()
    assert row is not None
    return int(row[0])
