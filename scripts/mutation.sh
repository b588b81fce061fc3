#!/usr/bin/env bash
# Mutation testing of the pure core (docs/testing.md, "Mutation testing"): mutmut changes one
# operator, constant or call of a module at a time and runs the tests that cover it; a
# mutant the tests still pass ("survived") is a change of behaviour nothing pins. Prints the
# kill rate per module. CPU heavy: run one or two modules at a time.
#
#   bash scripts/mutation.sh cluster_robust sampling      # the modules named
#   bash scripts/mutation.sh --list                       # the modules and their tests
#   MUTATION_JOBS=2 bash scripts/mutation.sh decision     # parallel mutants (default 1)
#   MUTATION_KEEP=1 bash scripts/mutation.sh lease        # keep the copies, to inspect
#
# Each module runs in a scratch copy of src/ and tests/ (mutmut writes `mutants/` beside
# them), with only that module mutated and only its tests run, so the worktree is never
# changed. mutmut comes from the dev extra (pinned in pyproject.toml and constraints.txt);
# without it the script installs that pin into a tool environment layered on the project's.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
PY="${PYTHON:-$root/.venv/bin/python}"
[ -x "$PY" ] || PY="$(command -v python3)"
MUTMUT_VERSION="$(sed -n 's/^mutmut==\([0-9.]*\).*/\1/p' constraints.txt)"
JOBS="${MUTATION_JOBS:-1}"

# module name → "source file|test paths" (the tests that pin it; the queue's and auth's use
# the test databases, as in the suite)
declare -A MODULES=(
  [decision]="src/valuerank/scoring/decision.py|tests/scoring"
  [scale]="src/valuerank/scoring/scale.py|tests/scoring tests/definitions/test_presentation.py"
  [consensus]="src/valuerank/consensus/consensus.py|tests/consensus"
  [expansion]="src/valuerank/definitions/expansion.py|tests/definitions/test_expansion.py tests/definitions/test_expansion_pins.py"
  [sampling]="src/valuerank/definitions/sampling.py|tests/definitions/test_sampling.py"
  [cluster_robust]="src/valuerank/analysis/cluster_robust.py|tests/analysis/test_cluster_robust.py tests/analysis/test_sensitivity.py tests/analysis/test_sensitivity_thresholds.py"
  [claim]="src/valuerank/queue/claim.py|tests/queue/test_claim.py tests/queue/test_claim_limits.py tests/queue/test_claim_putback.py"
  [lease]="src/valuerank/queue/lease.py|tests/queue/test_lease.py tests/queue/test_lease_pins.py tests/queue/test_lease_outcomes.py tests/queue/test_lease_batch.py"
  [auth]="src/valuerank/api/auth.py|tests/api/test_auth.py tests/api/test_auth_pins.py"
)

if [ "${1:-}" = "--list" ] || [ $# -eq 0 ]; then
  for name in $(printf '%s\n' "${!MODULES[@]}" | sort); do
    printf '%-15s %s\n' "$name" "${MODULES[$name]/|/  <- }"
  done
  [ $# -eq 0 ] && echo "usage: bash scripts/mutation.sh MODULE... (see above)" >&2 && exit 2
  exit 0
fi

# mutmut runs the tests in its own process: it must live beside the project's packages.
if ! "$PY" -c "import mutmut" 2>/dev/null; then
  tools="${XDG_CACHE_HOME:-$HOME/.cache}/valuerank-mutation-$MUTMUT_VERSION"
  if [ ! -x "$tools/bin/mutmut" ]; then
    "$PY" -m venv "$tools"
    site="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    own="$("$tools/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    echo "$site" >"$own/_valuerank_project.pth"  # the project's packages, mutmut's on top
    "$tools/bin/python" -m pip install --quiet -c constraints.txt "mutmut==$MUTMUT_VERSION"
  fi
  PY="$tools/bin/python"
fi

scratch="$(mktemp -d "${TMPDIR:-/tmp}/valuerank-mutation.XXXXXX")"
if [ -n "${MUTATION_KEEP:-}" ]; then
  echo "copies kept in $scratch"
else
  trap 'rm -rf "$scratch"' EXIT
fi
summary=()
for name in "$@"; do
  spec="${MODULES[$name]:-}"
  [ -n "$spec" ] || { echo "unknown module '$name' (bash scripts/mutation.sh --list)" >&2; exit 2; }
  source_file="${spec%%|*}"
  read -r -a tests <<<"${spec#*|}"
  work="$scratch/$name"
  mkdir -p "$work"
  cp -r src tests pyproject.toml "$work/"
  find "$work" -name __pycache__ -prune -exec rm -rf {} +
  {
    echo
    echo "[tool.mutmut]"
    echo "source_paths = [\"src/valuerank\"]"
    echo "only_mutate = [\"$source_file\"]"
    printf 'pytest_add_cli_args_test_selection = ['
    printf '"%s", ' "${tests[@]}"
    echo ']'
    # mutmut runs pytest again and again in one process (forked per mutant): the migrated
    # database template the first session made (tests/migrated_template.py) must outlive
    # the later sessions, so their temporary directories are kept (in the scratch copy,
    # away from other pytest runs' rotation).
    echo 'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-o", "tmp_path_retention_count=1000000"]'
    echo 'use_git_change_detection = false'
  } >>"$work/pyproject.toml"
  echo "== $name: mutating $source_file, running ${tests[*]}"
  mkdir -p "$work/pytest-tmp"
  (cd "$work" && PYTHONPATH="$work" PYTEST_DEBUG_TEMPROOT="$work/pytest-tmp" "$PY" -m mutmut run --max-children "$JOBS" >"$work/run.log" 2>&1) || {
    tail -40 "$work/run.log" >&2
    echo "mutmut failed on $name (log above)" >&2
    exit 1
  }
  (cd "$work" && "$PY" -m mutmut export-cicd-stats >/dev/null && "$PY" -m mutmut results >"$work/survivors.txt" || true)
  line="$("$PY" - "$work/mutants/mutmut-cicd-stats.json" "$name" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
tested = s["total"] - s["skipped"] - s["no_tests"]
killed = s["killed"] + s["timeout"]
rate = 100 * killed / tested if tested else 0.0
print(f"{sys.argv[2]:<15} {killed:>4}/{tested:<4} killed  {rate:5.1f} %"
      f"  (survived {s['survived']}, no tests {s['no_tests']}, suspicious {s['suspicious']})")
EOF
)"
  summary+=("$line")
  echo "$line"
  if grep -q survived "$work/survivors.txt" 2>/dev/null; then
    echo "   survivors (MUTATION_KEEP=1, then \`mutmut show NAME\` in $work shows one):"
    grep survived "$work/survivors.txt" | sed 's/^/     /'
  fi
done
echo
echo "kill rate per module (killed / mutants with tests):"
printf '  %s\n' "${summary[@]}"
