#!/usr/bin/env bash
# helm rollback, rehearsed (docs/upgrade.md): the previous schema's quota-hub, built from git (a
# worktree of the last commit before the newest migration), and this checkout's, old -> new -> old
# on SQLite and on PostgreSQL with a writer running throughout (on PostgreSQL old and new serve
# side by side, as in a rolling upgrade); then every account must reconcile and every
# acknowledged write be there. Outside the test command (it builds a second quota-hub: ~10
# minutes the first time); its runs are recorded in docs/status.md.
#   bash scripts/rollback-test.sh            # both databases
#   bash scripts/rollback-test.sh sqlite     # one
set -euo pipefail
cd -P "$(dirname "$0")/.."
started=$(date +%s)
schema=wasm/src/sql_store/schema/sqlite.rs
# The commit that set the newest schema version, and the one before it.
newest=$(git log -1 --format=%H -G 'current_version: [0-9]+' -- "$schema")
old_rev=$(git rev-parse "$newest^")
echo "newest migration: $(git log -1 --format='%h %s' "$newest" | cut -c1-100)"
echo "previous schema:  $(git log -1 --format='%h %s' "$old_rev" | cut -c1-100)"
old=target/rollback/old
if [ "$(git -C "$old" rev-parse HEAD 2>/dev/null || true)" != "$old_rev" ]; then
    git worktree remove --force "$old" 2>/dev/null || rm -rf "$old"
    git worktree prune
    mkdir -p target/rollback
    git worktree add --detach "$old" "$old_rev" >/dev/null
fi
echo "building the previous quota-hub in $old (its own target dir) ..."
(cd "$old" && bash scripts/build-wasm.sh >/dev/null && bash scripts/build-js.sh >/dev/null 2>&1 \
    && cargo build --locked -q -p quota-hub)
echo "building this checkout's quota-hub ..."
bash scripts/build-wasm.sh >/dev/null && bash scripts/build-js.sh >/dev/null 2>&1 && cargo build --locked -q -p quota-hub
export ROLLBACK_OLD_BIN="$PWD/$old/target/debug/quota-hub" ROLLBACK_NEW_BIN="$PWD/target/debug/quota-hub"
# The test environment's Python has psycopg (scripts/python-env.sh makes it).
[ -x target/pyenv/bin/python ] || bash scripts/python-env.sh >/dev/null
py=target/pyenv/bin/python
which=${1:-both}
if [ "$which" != postgres ]; then "$py" scripts/rollback_test.py sqlite; fi
if [ "$which" != sqlite ]; then bash scripts/with-postgres.sh "$py" scripts/rollback_test.py postgres; fi
echo "rollback rehearsal passed in $(( $(date +%s) - started )) s"
