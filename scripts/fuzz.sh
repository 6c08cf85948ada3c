#!/usr/bin/env bash
# Coverage-guided fuzzing (cargo fuzz / libFuzzer, nightly) of every input surface of the engine:
#   scripts/fuzz.sh [MINUTES_PER_TARGET] [TARGET...]
# Targets (tests/support/src/surfaces.rs holds each one's input format and invariants):
#   handle_request values_file cron csv_import strict_json
# Each target starts from seeds made from the scenario files and fixtures (plus what earlier runs
# kept in fuzz/corpus/), runs for MINUTES (default 10), and prints executions, coverage (libFuzzer's
# edge count `cov` and features `ft`) and findings. A crash is copied to
# tests/fuzz-regressions/<target>/, where `cargo test -p quota-scenarios` replays it for ever.
# The summary is also written to target/fuzz-report.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

minutes="${1:-10}"
shift || true
case "$minutes" in
    '' | *[!0-9]* | 0) echo "fuzz.sh: MINUTES_PER_TARGET must be a whole number of minutes from 1, got \`$minutes'" >&2; exit 2 ;;
esac
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(handle_request values_file cron csv_import strict_json)

rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
cargo +nightly fuzz --version >/dev/null 2>&1 || cargo install cargo-fuzz --locked --version =0.13.2

echo "== building the fuzz targets (nightly, release, sanitizer coverage, debug assertions: the engine's invariants on)"
(cd fuzz && cargo +nightly fuzz build -O -a)
(cd fuzz && cargo +nightly run -q --release --bin make-seeds corpus)

mkdir -p target
report=target/fuzz-report.txt
printf '%-15s %8s %14s %10s %8s %8s %s\n' target minutes executions exec/s cov ft findings | tee "$report"
status=0
for t in "${targets[@]}"; do
    log="target/fuzz-$t.log"
    echo "== $t: $minutes min (log: $log)" >&2
    rm -rf "fuzz/artifacts/$t"
    set +e
    (cd fuzz && cargo +nightly fuzz run -O -a "$t" "corpus/$t" -- \
        -max_total_time=$((minutes * 60)) -print_final_stats=1 -max_len=65536 -timeout=10 \
        -rss_limit_mb=2048 -close_fd_mask=3) >"$log" 2>&1
    rc=$?
    set -e
    execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1)
    rate=$(grep -oE 'stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    cov=$(grep -oE 'cov: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || true)
    ft=$(grep -oE 'ft: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || true)
    findings=0
    if [ -d "fuzz/artifacts/$t" ]; then
        mkdir -p "tests/fuzz-regressions/$t"
        for f in fuzz/artifacts/"$t"/*; do
            [ -f "$f" ] || continue
            cp "$f" "tests/fuzz-regressions/$t/"
            findings=$((findings + 1))
        done
    fi
    if [ "$rc" -ne 0 ] || [ "$findings" -ne 0 ]; then
        status=1
        echo "!! $t: exit $rc, $findings finding(s) copied to tests/fuzz-regressions/$t/; see $log" >&2
    fi
    printf '%-15s %8s %14s %10s %8s %8s %s\n' "$t" "$minutes" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$findings" | tee -a "$report"
done
exit $status
