#!/usr/bin/env bash
# Runs every check and test of the project from a fresh clone. Installs what it needs.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
# Each step says the disk left too: CI's disk is not large, and running out reads as a failed test.
step() { printf '\n== %s (%ss, %s free)\n' "$*" "$(( $(date +%s) - started ))" "$(df -h --output=avail . | tail -1 | tr -d ' ')"; }

step "toolchain"
command -v cargo >/dev/null || { echo "cargo is required (rustup)"; exit 1; }
rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
cargo --version
# A fresh clone builds once: incremental state would only take disk (over 1 GB) that CI may not have.
if [ "${CI:-}" = true ]; then export CARGO_INCREMENTAL=0; fi
# The README walkthrough test runs curl, as a newcomer would.
if ! command -v curl >/dev/null; then
    if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq curl; else sudo apt-get install -y -qq curl; fi
fi

step "wasm components (shipped and fault-injection)"
bash scripts/build-wasm.sh --fault

step "javascript build: the component through jco (js/gen), embedded by quota-hub's admin page"
bash scripts/build-js.sh

step "format, no import circle, ARCHITECTURE.md's sizes current (scripts/check_imports.py, scripts/sizes.py)"
cargo fmt --all -- --check
python3 scripts/check_imports.py
python3 scripts/sizes.py --check

# The PostgreSQL suites are test targets behind the `pg-tests` features; every Rust step turns them
# on, so the workspace compiles once (not again with other features for those suites).
pg_features=(--features quota-host/pg-tests,quota-hub/pg-tests)

step "clippy"
cargo clippy --workspace --all-targets --locked "${pg_features[@]}" -- -D warnings
cargo clippy -p quota-wasm --target wasm32-unknown-unknown --features fault-injection --locked -- -D warnings

step "tests, the PostgreSQL suites against a real server (scripts/with-postgres.sh)"
bash scripts/with-postgres.sh cargo test --workspace --locked "${pg_features[@]}"

step "container image without an engine: a static quota-hub in an OCI layout (scripts/build-image.sh)"
bash scripts/build-image.sh
# The OCI tools the image and release tests read the layouts with, qemu-user to run the arm64
# binary, and the arm64 C cross-compiler the release's binary needs (command, then its Debian
# package): installed here, so nothing runs apt beside the Python tests.
for pair in umoci:umoci skopeo:skopeo qemu-aarch64:qemu-user aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu; do
    command -v "${pair%%:*}" >/dev/null || { if [ "$(id -u)" = 0 ]; then apt-get update -qq && env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pair#*:}" >/dev/null;
        else sudo apt-get update -qq && sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pair#*:}" >/dev/null; fi; }
done
if [ "${CI:-}" = true ]; then
    # A CI clone is thrown away and its disk is not large. The steps after this one run what is
    # built and cargo only for the release's static builds, so the test executables (~1.2 GB) go.
    # Binaries cargo hardlinks into target/debug have two links and stay.
    find target/debug/deps -maxdepth 1 -type f -perm -u+x -links 1 ! -name '*.so' -delete
fi

step "python: the engine in JupyterHub (python/); beside it javascript: the Node bridge (js/), and the release's long builds at the lowest priority (scripts/release.sh --prepare)"
# The Python and Node tests mostly wait on real hubs, servers and browsers: the release's arm64
# build and cargo-cyclonedx take the CPU they leave (nice 19), so the release after them is quick.
# The Node tests' and the builds' logs are printed after the Python run. Chromium is installed
# first, so nothing runs apt at once.
bash scripts/ensure-chromium.sh
(nice -n 19 bash scripts/release.sh --prepare > target/release-prepare.log 2>&1) &
prepare_pid=$!
(bash scripts/test-js.sh > target/test-js.log 2>&1) &
js_pid=$!
py_rc=0
QUOTA_RELEASE_TESTS_LATER=1 bash scripts/test-python.sh || py_rc=$?
js_rc=0
wait "$js_pid" || js_rc=$?
step "javascript: the Node bridge (js/), run beside the Python tests (exit $js_rc)"
cat target/test-js.log
prepare_rc=0
wait "$prepare_pid" || prepare_rc=$?
step "the release's long builds, run beside the tests (exit $prepare_rc)"
cat target/release-prepare.log
[ "$py_rc" -eq 0 ] || { echo "the Python tests failed (exit $py_rc)"; exit "$py_rc"; }
[ "$js_rc" -eq 0 ] || exit "$js_rc"
[ "$prepare_rc" -eq 0 ] || exit "$prepare_rc"

step "release into dist/: wheel, npm package, amd64 + arm64 binaries and image, chart, SBOMs, checksums (scripts/release.sh), and its tests (python/tests/test_release.py)"
bash scripts/release.sh
(cd python/tests && ../../target/pyenv/bin/python -m pytest -q -p no:cacheprovider test_release.py)
if [ "${CI:-}" = true ]; then
    # The cross-compiled release builds (~1.4 GB) are copied into dist/.
    rm -rf target/x86_64-unknown-linux-musl target/aarch64-unknown-linux-musl
fi

step "API fuzzing: schemathesis against a real quota-hub serve, 25 examples per operation and phase (scripts/fuzz-api.sh)"
# The quota-hub the Rust tests built (with the test features: building it again without them would
# recompile the server).
QUOTA_HUB_BIN=target/debug/quota-hub bash scripts/fuzz-api.sh 25

step "done in $(( $(date +%s) - started ))s"
