#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL server: Debian's `postgresql` (installed when missing),
# a new cluster in a temporary directory, listening on 127.0.0.1 only, on a free port, trust
# authentication. The command gets QUOTA_TEST_PG_URL=postgres://postgres@127.0.0.1:PORT/postgres,
# and QUOTA_TEST_PG_STOP / QUOTA_TEST_PG_START, shell commands that stop and start that server (a
# test of what happens while the database is down); the server is stopped and its directory
# removed when the command ends, whatever its outcome.
#   bash scripts/with-postgres.sh cargo test -p quota-host --features pg-tests --test postgres
set -euo pipefail
sudo_=""; [ "$(id -u)" = 0 ] || sudo_="sudo"
bin=""
for d in /usr/lib/postgresql/*/bin; do [ -x "$d/pg_ctl" ] && bin="$d"; done
if [ -z "$bin" ]; then
    echo "installing postgresql (Debian)"
    $sudo_ apt-get update -qq && $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    for d in /usr/lib/postgresql/*/bin; do [ -x "$d/pg_ctl" ] && bin="$d"; done
fi
# initdb and the server refuse to run as root: as root, run them as the `postgres` user.
as_pg=()
if [ "$(id -u)" = 0 ]; then as_pg=(runuser -u postgres --); fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/quota-pg.XXXXXX")
chmod 755 "$dir"
[ "$(id -u)" = 0 ] && chown postgres "$dir"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cleanup() {
    "${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT
"${as_pg[@]}" "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
options="-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200 -c fsync=on"
"${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 60 -o "$options" start >/dev/null
export QUOTA_TEST_PG_URL="postgres://postgres@127.0.0.1:$port/postgres"
export QUOTA_TEST_PG_STOP="${as_pg[*]} $bin/pg_ctl -D $dir/data -m fast -w stop >/dev/null"
export QUOTA_TEST_PG_START="${as_pg[*]} $bin/pg_ctl -D $dir/data -l $dir/log -w -t 60 -o '$options' start >/dev/null"
echo "postgresql $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port"
"$@"
