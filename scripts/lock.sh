#!/usr/bin/env bash
# Refresh constraints.txt, the lock scripts/bootstrap.sh installs from: every package the
# dev, local, redis and testservices extras need, resolved with pip-tools from pip's
# configured indexes (so the lock holds only what installs here), for $PYTHON (default
# python3, the version CI runs). Run it after changing a dependency in pyproject.toml, then
# `bash scripts/test.sh` and commit both files.
set -euo pipefail
cd "$(dirname "$0")/.."
tools="$(mktemp -d "${TMPDIR:-/tmp}/valuerank-lock.XXXXXX")"
trap 'rm -rf "$tools"' EXIT
"${PYTHON:-python3}" -m venv "$tools"
"$tools/bin/python" -m pip install --quiet "pip-tools>=7.4,<8"
# --upgrade: newest versions within pyproject's ranges; pip itself is locked too
# (bootstrap.sh installs it first), hence --allow-unsafe and the extra input line.
echo "pip" >"$tools/pip.in"
CUSTOM_COMPILE_COMMAND="bash scripts/lock.sh" "$tools/bin/pip-compile" --quiet --upgrade --strip-extras --allow-unsafe --no-emit-index-url \
  --no-emit-find-links --extra dev --extra local --extra redis --extra testservices \
  --output-file constraints.txt pyproject.toml "$tools/pip.in"
# The lock must not name the temporary input file (it changes on every run), nor ValueRank
# itself (the dev extra's `valuerank[redis]` puts it there with this checkout's path).
sed -i "s|$tools/pip.in|scripts/lock.sh|" constraints.txt
awk '/^valuerank @ /{skip=1; next} skip && /^ +#/{next} {skip=0; print}' constraints.txt \
  >"$tools/lock.txt"
mv "$tools/lock.txt" constraints.txt
echo "constraints.txt: $(grep -c '==' constraints.txt) packages locked"
