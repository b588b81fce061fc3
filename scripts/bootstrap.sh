#!/usr/bin/env bash
# Sourced by the other scripts: make .venv (with $PYTHON, default python3) and install
# ValueRank into it, with the extras named in $1 (e.g. "dev"; empty for none), at the exact
# versions of constraints.txt (the lock: refresh it with scripts/lock.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ ! -x .venv/bin/python ]; then
  "${PYTHON:-python3}" -m venv .venv
fi
.venv/bin/python -m pip install --quiet -c constraints.txt pip
.venv/bin/python -m pip install --quiet -c constraints.txt -e ".${1:+[$1]}"
