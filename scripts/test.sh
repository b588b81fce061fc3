#!/usr/bin/env bash
# Install ValueRank with its development tools and the local model into .venv, then lint,
# type-check and test (the local model answers a real prompt in the tests).
# Storage tests run on SQLite and on PostgreSQL (VALUERANK_TEST_DATABASE_URL, default
# postgresql://postgres@127.0.0.1:5432/test). The whole suite runs in
# $VALUERANK_TEST_PROCESSES processes (default 3: most tests wait on workers, servers and
# the browser more than they compute), then the tests marked `serial` (they restart the shared
# PostgreSQL server) alone. Arguments run just those tests: scripts/test.sh tests/queue -x
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/bootstrap.sh "dev,local"

.venv/bin/ruff check src tests bench
.venv/bin/mypy
if [ "$#" -gt 0 ]; then
  exec .venv/bin/pytest -q "$@"
fi
.venv/bin/pytest -q -n "${VALUERANK_TEST_PROCESSES:-3}" --dist loadscope -m "not serial"
.venv/bin/pytest -q -m serial
