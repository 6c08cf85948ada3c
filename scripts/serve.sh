#!/usr/bin/env bash
# The main job: builds the engine component and the quota-hub server, then serves the REST API with
# an embedded SQLite database (quota.db) and the example values file. Extra arguments go to
# `quota-hub serve` (e.g. --listen 0.0.0.0:8765). Stop with Ctrl-C. The admin page is at
# http://127.0.0.1:8765/hub/admin/users (sign in with a token from `quota-hub token issue --user NAME --admin`).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null || { echo "cargo is required (rustup)"; exit 1; }
bash scripts/build-wasm.sh
bash scripts/build-js.sh   # the admin page's engine (jco), embedded in the binary
cargo build --release --locked -p quota-hub
# The explicit migration step (docs/upgrade.md): creates quota.db the first time; after an upgrade
# that changed the schema, backs it up into target/quota-backups first, then migrates it.
target/release/quota-hub migrate --values examples/values.yaml --db sqlite://quota.db --backup-dir target/quota-backups
exec target/release/quota-hub serve --values examples/values.yaml --db sqlite://quota.db "$@"
