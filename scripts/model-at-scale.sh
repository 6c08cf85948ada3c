#!/usr/bin/env bash
# The model-based test (core/tests/model/) at scale: random operations over every engine
# operation, checked step by step against a reference model and the ledger invariants.
#   scripts/model-at-scale.sh [OPERATIONS] [FIRST_SEED]
# OPERATIONS defaults to 10,000,000 (runs of 1,000 operations, one seed each); CI runs 110,000.
# Prints progress, then the operations per second; a divergence names its seed and the command
# that replays exactly that run.
set -euo pipefail
cd "$(dirname "$0")/.."
ops="${1:-10000000}"
base="${2:-1592590336}"
case "$ops$base" in *[!0-9]*) echo "model-at-scale.sh: OPERATIONS and FIRST_SEED must be whole numbers" >&2; exit 2 ;; esac
runs=$(( (ops + 999) / 1000 ))
[ "$runs" -ge 1 ] || { echo "model-at-scale.sh: OPERATIONS must be at least 1" >&2; exit 2; }
echo "model: $runs runs of 1,000 operations, seeds $base..$((base + runs - 1)) (release build)" >&2
QUOTA_MODEL_RUNS="$runs" QUOTA_MODEL_BASE="$base" \
    cargo test -q --release --locked -p quota-core --test model -- --nocapture
