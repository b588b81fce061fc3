"""`valuerank queue sql`: the claiming statements a worker runs, printed (no database needed)."""

from __future__ import annotations

from typer.testing import CliRunner

from valuerank.cli import app
from valuerank.queue.claim_pg import ClaimShape
from valuerank.queue.claim_sql import pg_sql
from valuerank.queue.dialect import compact_sql


def _run(*args: str) -> str:
    result = CliRunner().invoke(app, ["queue", "sql", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_compact_is_exactly_what_runs() -> None:
    out = _run("--shape", "fast", "-n", "5", "--kind", "probe", "--compact")
    assert out == pg_sql(ClaimShape.FAST, 5, ("probe",), None) + ";\n"


def test_every_shape_is_printed_part_by_part_with_comments() -> None:
    out = _run("-n", "3", "--window", "40")
    statements = out.removesuffix(";\n").split(";\n\n")
    assert len(statements) == 3
    for shape, printed in zip(ClaimShape, statements, strict=True):
        assert printed.startswith(f"-- {shape.value}: claim up to 3 job(s), 40 candidate(s)")
        assert "\nclaimed AS (\n" in printed and "\n-- The claim: " in printed
        code = "\n".join(line for line in printed.splitlines() if not line.startswith("--"))
        assert compact_sql(code) == pg_sql(shape, 3, None, 40)


def test_sqlite() -> None:
    out = _run("--dialect", "sqlite", "-n", "2", "--kind", "a", "--kind", "b")
    assert out.startswith("UPDATE jobs SET status='running'")
    assert "j.kind IN ('a', 'b')" in out and "LIMIT 2" in out and "locked_by=:worker_id" in out
