#!/usr/bin/env bash
# Install ValueRank and take the CLI tour on the embedded default (SQLite in ./valuerank.db):
# import a definition, fork it, compare the versions, expand and sample the scenarios.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/bootstrap.sh ""
vr=.venv/bin/valuerank
export VALUERANK_DATABASE_URL="${VALUERANK_DATABASE_URL:-sqlite:///./valuerank.db}"

step() { printf '\n\033[1m$ valuerank %s\033[0m\n' "$*"; }

step formats check examples/
$vr formats check examples/

step definitions import examples/exp-cafe-mandate.md
parent=$($vr definitions import examples/exp-cafe-mandate.md --json | .venv/bin/python -c 'import json,sys; print(json.load(sys.stdin)["id"])')
$vr definitions show "$parent"

step definitions fork "$parent" --from-file examples/exp-cafe-mandate.owner.md
child=$($vr definitions fork "$parent" --from-file examples/exp-cafe-mandate.owner.md --json | .venv/bin/python -c 'import json,sys; print(json.load(sys.stdin)["id"])')
echo "forked $child"

step definitions lineage "$child"
$vr definitions lineage "$child"

step definitions diff "$parent" "$child"
$vr definitions diff "$parent" "$child"

step scenarios expand "$child" --sample-percentage 25 --sample-seed 7 -o out/exp-001.cafe-owner.yaml
$vr scenarios expand "$child" --sample-percentage 25 --sample-seed 7 -o out/exp-001.cafe-owner.yaml
head -n 20 out/exp-001.cafe-owner.yaml

step rubrics import examples/values_rubric.yaml
$vr rubrics import examples/values_rubric.yaml

step definitions list
$vr definitions list
