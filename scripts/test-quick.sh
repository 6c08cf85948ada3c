#!/usr/bin/env bash
# The quick loop, for every change before the whole test command (scripts/test-all.sh): formatting,
# no import circle, ARCHITECTURE.md and CODE-MAP.md true to the tree, the size limits, clippy, then the unit, scenario and model
# tests on the native core and the same scenarios through the component over SQLite. Under five
# minutes on a warm checkout (the README has the figure); needs only a Rust toolchain.
#     bash scripts/test-quick.sh
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
step() { printf '\n== %s (%ss)\n' "$*" "$(( $(date +%s) - started ))"; }

step "format, import circles, ARCHITECTURE.md and CODE-MAP.md against the tree, size limits"
cargo fmt --all -- --check
python3 scripts/check_imports.py
python3 scripts/check_architecture.py
python3 scripts/code_map.py --check
python3 scripts/check_limits.py
python3 scripts/security_table.py --check

step "the engine component (scripts/build-wasm.sh: nothing to do when unchanged)"
bash scripts/build-wasm.sh --fault

step "clippy: the engine, the component, the Rust host and the test support (quota-hub: the test command)"
cargo clippy --locked -p quota-core -p quota-sql-wire -p quota-wasm -p quota-host -p quota-scenarios --all-targets -- -D warnings
cargo clippy --locked -p quota-wasm --target wasm32-unknown-unknown --features fault-injection -- -D warnings

step "unit, scenario and model tests on the native core; the scenarios through the component"
cargo test --locked -q -p quota-core -p quota-scenarios
cargo test --locked -q -p quota-host --test integration -- scenarios_component:: typed_exports:: faults::

step "done in $(( $(date +%s) - started ))s"
