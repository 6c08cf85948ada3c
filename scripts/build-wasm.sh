#!/usr/bin/env bash
# Builds the engine component: target/wasm/quota-engine.wasm (and, with --fault, the test-only
# fault-injection variant target/wasm/quota-engine-fault.wasm). Needs only crates.io.
set -euo pipefail
cd -P "$(dirname "$0")/.."  # -P: the checkout, also when called through a symlink
rustup target list --installed 2>/dev/null | grep -q '^wasm32-unknown-unknown$' || rustup target add wasm32-unknown-unknown
mkdir -p target/wasm
cargo build --locked -q -p componentize
build() { # feature-args out-name target-dir
  cargo build --locked -p quota-wasm --target wasm32-unknown-unknown --profile wasm $1 --target-dir "$3"
  target/debug/componentize "$3/wasm32-unknown-unknown/wasm/quota_wasm.wasm" "target/wasm/$2"
}
build "" quota-engine.wasm target
if [ "${1:-}" = "--fault" ]; then
  build "--features fault-injection" quota-engine-fault.wasm target/fault
fi
