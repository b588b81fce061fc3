"""The test command's own parts: `is_ci()`, the CI cap on property-test examples, and
scripts/test_services.sh bringing up a PostgreSQL and a Redis of the suite's own (as on a
machine without them: free ports here), usable, and gone after services_down; the CLI's
compatibility files optional outside CI and required in it."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import psycopg
import pytest
from hypothesis import settings
from tests.conftest import CI_MAX_EXAMPLES, HYPOTHESIS_PROFILE, examples, is_ci

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, False),
        ("", False),
        ("0", False),
        ("false", False),
        ("False", False),
        (" no ", False),
        ("true", True),
        ("1", True),
        ("yes", True),
        ("github-actions", True),
    ],
)
def test_is_ci(monkeypatch: pytest.MonkeyPatch, value: str | None, expected: bool) -> None:
    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    assert is_ci() is expected


def test_no_profile_has_a_per_example_deadline() -> None:
    """A property test is never failed for being slow on a loaded machine, in CI or not."""
    assert settings.default is not None and settings.default.deadline is None
    for name in ("ci", "dev"):
        profile = settings.get_profile(name)
        assert profile is not None and profile.deadline is None, name


def test_examples_are_capped_only_in_the_ci_profile() -> None:
    if HYPOTHESIS_PROFILE == "ci":
        assert examples(400) == CI_MAX_EXAMPLES
        assert examples(10) == 10
    else:
        assert examples(400) == 400


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _compat_up(tmp_path: Path, ci: str | None, compat_dir: str | None) -> tuple[str, str, str]:
    """`_compat_up` run from a plain clone (no ../shared beside it, unless the test made one):
    the summary's missing list, the directory the tests get, and what it said."""
    clone = tmp_path / "clone"
    (clone / "scripts").mkdir(parents=True, exist_ok=True)
    (clone / "scripts" / "test_services.sh").write_bytes(
        (ROOT / "scripts" / "test_services.sh").read_bytes()
    )
    script = """
set -euo pipefail
source scripts/test_services.sh
_compat_up
echo "missing: ${SERVICES_MISSING[*]:-none}"
echo "compat: ${VALUERANK_COMPAT_DIR:-unset}"
"""
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "VALUERANK_COMPAT_DIR")}
    if ci is not None:
        env["CI"] = ci
    if compat_dir is not None:
        env["VALUERANK_COMPAT_DIR"] = compat_dir
    done = subprocess.run(
        ["bash", "-c", script], cwd=clone, env=env, capture_output=True, text=True, check=True
    )
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    return lines["missing"], lines["compat"], done.stderr


def test_compat_files_are_a_note_outside_ci(tmp_path: Path) -> None:
    for ci in (None, "false"):
        missing, compat, said = _compat_up(tmp_path, ci, None)
        assert missing == "none" and compat == "unset"
        assert "note: the CLI's compatibility files are not here" in said


def test_compat_files_are_required_in_ci(tmp_path: Path) -> None:
    missing, _, _ = _compat_up(tmp_path, "true", None)
    assert missing.startswith("compatibility files (no ../shared/compat/valuerank-cli")
    wrong, _, _ = _compat_up(tmp_path, "true", str(tmp_path / "nowhere"))
    assert wrong.startswith("compatibility files (VALUERANK_COMPAT_DIR=")
    present, compat, said = _compat_up(tmp_path, "true", str(tmp_path))
    assert present == "none" and compat == str(tmp_path) and said == ""


def test_compat_files_found_beside_the_clone_are_used(tmp_path: Path) -> None:
    beside = tmp_path / "shared" / "compat" / "valuerank-cli"
    beside.mkdir(parents=True)
    missing, compat, said = _compat_up(tmp_path, "true", None)
    assert missing == "none" and compat == str(beside) and said == ""


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        return True
    return False


def test_brings_up_postgres_and_redis_and_stops_them() -> None:
    pg_port, redis_port = _free_port(), _free_port()
    pg_url = f"postgresql://postgres@127.0.0.1:{pg_port}/test"
    # The check runs inside the script, between bring-up and services_down.
    script = f"""
set -euo pipefail
source scripts/test_services.sh
trap services_down EXIT
export VALUERANK_TEST_DATABASE_URL={pg_url}
export VALUERANK_TEST_REDIS_URL=redis://127.0.0.1:{redis_port}/0
_postgres_up
_redis_up
echo "missing: ${{SERVICES_MISSING[*]:-none}}"
echo "data: $VALUERANK_TEST_PG_DATA"
.venv/bin/python -c '
import socket, psycopg
with psycopg.connect("{pg_url}") as conn:
    conn.execute("create table t (x int)")
    conn.execute("insert into t values (1)")
    print("postgres:", conn.execute("select sum(x) from t").fetchone()[0])
with socket.create_connection(("127.0.0.1", {redis_port})) as s:
    s.sendall(b"PING\\r\\n")
    print("redis:", s.recv(16).decode().strip())
'
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VALUERANK_TEST_")}
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    assert lines["missing"] == "none", done.stderr
    assert lines["postgres"] == "1" and lines["redis"] == "+PONG", done.stdout
    # Stopped, and their data deleted.
    assert _refused(pg_port) and _refused(redis_port)
    assert not Path(lines["data"]).exists()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(pg_url, connect_timeout=2)
