#!/usr/bin/env bash
# Run a command with DATABASE_URL pointing at a PostgreSQL server.
#
# 1. DATABASE_URL already names PostgreSQL: use it.
# 2. A server answers on 127.0.0.1:5432 and lets user postgres in: use it.
#    (FORCE_THROWAWAY_PG=1 skips this step, to exercise the next one.)
# 3. Otherwise start a throwaway cluster in a temporary directory on a free loopback
#    port, as an ordinary user (never as root), and remove it afterwards. Debian's
#    postgresql package is installed first when its binaries are missing and we are root.
set -euo pipefail

if [[ "${DATABASE_URL:-}" == postgres* ]]; then
  exec "$@"
fi

if [[ -z "${FORCE_THROWAWAY_PG:-}" ]] && command -v psql >/dev/null 2>&1 && psql -h 127.0.0.1 -p 5432 -U postgres -d postgres -Atqc 'select 1' >/dev/null 2>&1; then
  export DATABASE_URL="postgres://postgres@127.0.0.1:5432/survey_eval_studio"
  echo "with-postgres: using the server on 127.0.0.1:5432"
  exec "$@"
fi

find_bin() {
  local dir
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [[ -x "$dir/initdb" ]]; then echo "$dir"; return 0; fi
  done
  if command -v initdb >/dev/null 2>&1; then dirname "$(command -v initdb)"; return 0; fi
  return 1
}

if ! PGBIN=$(find_bin); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "with-postgres: no PostgreSQL server answers and its binaries are missing; install Debian's 'postgresql' package (needs root)" >&2
    exit 1
  fi
  echo "with-postgres: installing Debian's postgresql package"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  PGBIN=$(find_bin)
fi

PGDIR=$(mktemp -d /tmp/ses-pg.XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
RUN_AS=()
if [[ $(id -u) -eq 0 ]]; then
  # PostgreSQL refuses to run as root; the cluster belongs to an unprivileged account.
  PGUSER_OS=nobody
  if id postgres >/dev/null 2>&1; then PGUSER_OS=postgres; fi
  chown "$PGUSER_OS" "$PGDIR"
  RUN_AS=(runuser -u "$PGUSER_OS" --)
fi

cleanup() {
  "${RUN_AS[@]}" "$PGBIN/pg_ctl" -D "$PGDIR/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$PGDIR"
}
trap cleanup EXIT INT TERM

echo "with-postgres: starting a throwaway cluster in $PGDIR on port $PORT"
"${RUN_AS[@]}" "$PGBIN/initdb" -D "$PGDIR/data" -U postgres -A trust --no-sync -E UTF8 >/dev/null
"${RUN_AS[@]}" "$PGBIN/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/server.log" -w \
  -o "-c listen_addresses=127.0.0.1 -p $PORT -k $PGDIR -c fsync=off -c full_page_writes=off -c max_connections=200" start >/dev/null
export DATABASE_URL="postgres://postgres@127.0.0.1:$PORT/survey_eval_studio"
"$@"
