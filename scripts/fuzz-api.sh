#!/usr/bin/env bash
# Fuzzes a real `quota-hub serve` (an SQLite file, examples/values.yaml) from the OpenAPI document
# it serves, with schemathesis (scripts/fuzz_api.py says what is checked):
#   scripts/fuzz-api.sh [MAX_EXAMPLES] [SEED]
# MAX_EXAMPLES per operation and phase (default 200; the test command runs 25). Installs the
# Python test environment (scripts/python-env.sh) and builds quota-hub (debug), unless
# QUOTA_HUB_BIN names a quota-hub binary to fuzz (the test command passes the one its tests built).
set -euo pipefail
cd "$(dirname "$0")/.."
examples="${1:-200}"
seed="${2:-}"
case "$examples$seed" in *[!0-9]*) echo "fuzz-api.sh: MAX_EXAMPLES and SEED must be whole numbers" >&2; exit 2 ;; esac
[ -x target/pyenv/bin/schemathesis ] || bash scripts/python-env.sh
[ -f target/wasm/quota-engine.wasm ] || bash scripts/build-wasm.sh
bin="${QUOTA_HUB_BIN:-}"
if [ -z "$bin" ]; then
    cargo build -q --locked -p quota-hub
    bin=target/debug/quota-hub
fi
args=(--bin "$bin" --max-examples "$examples" --report-dir target/fuzz-api)
[ -z "$seed" ] || args+=(--seed "$seed")
exec target/pyenv/bin/python scripts/fuzz_api.py "${args[@]}"
