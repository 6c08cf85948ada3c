#!/usr/bin/env bash
# How long a lost volume takes to come back with Litestream (docs/operations.md, "What a lost
# volume loses"): a quota database of about 1 GB replicated to a file replica, the volume deleted,
# the restore timed and checked. Outside the test command (it writes 2 GB and takes minutes).
#   bash scripts/replication-rto.sh [--gb 1]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --locked -q -p quota-hub
[ -x target/pyenv/bin/litestream ] || bash scripts/python-env.sh >/dev/null
exec target/pyenv/bin/python scripts/replication_rto.py "$@"
