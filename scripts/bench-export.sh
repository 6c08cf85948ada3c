#!/usr/bin/env bash
# `quota-hub export-ledger` over a large ledger: peak memory (RSS) and rows per second, for CSV and
# JSON lines, at two sizes (memory must not grow with the ledger).
#   scripts/bench-export.sh [ROWS]
# ROWS defaults to 10,000,000 (the larger size; the smaller is a tenth of it). The ledger is written
# straight into a fresh SQLite file (the engine's schema, from `quota-hub list-quota`), in a
# temporary directory removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
rows="${1:-10000000}"
case "$rows" in *[!0-9]*|"") echo "bench-export.sh: ROWS must be a whole number" >&2; exit 2 ;; esac
command -v sqlite3 >/dev/null || { echo "bench-export.sh: needs the sqlite3 shell (apt-get install sqlite3)" >&2; exit 2; }
cargo build -q --release --locked -p quota-hub
bin=target/release/quota-hub
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for n in $((rows / 10)) "$rows"; do
    db="$dir/ledger-$n.db"
    "$bin" list-quota --db "sqlite://$db" >/dev/null # creates the engine's schema
    echo "writing $n ledger rows" >&2
    sqlite3 "$db" "WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i + 1 < $n)
        INSERT INTO transactions (username, amount, transaction_type, resource_type, description,
          balance_before, balance_after, created_at, created_by)
        SELECT 'user' || (i % 10000), -(1 + i % 60), 'usage', 'gpu', 'Session ' || i || ': 5 min @ 3/min',
          0, -(1 + i % 60), 1795000000 + i * 3, NULL FROM s;"
    for format in csv jsonl; do
        out="$dir/out.$format"
        /usr/bin/time -f "%M %e" -o "$dir/time" "$bin" export-ledger --db "sqlite://$db" --format "$format" -o "$out" 2>/dev/null
        read -r kb secs < "$dir/time"
        lines=$(wc -l < "$out")
        awk -v n="$n" -v f="$format" -v kb="$kb" -v s="$secs" -v l="$lines" 'BEGIN {
            printf "export-ledger %s of %d rows: %d lines, peak RSS %.1f MiB, %.1f s, %.0f rows/s\n", f, n, l, kb / 1024, s, n / (s > 0 ? s : 1) }'
        rm -f "$out"
    done
    rm -f "$db"
done
