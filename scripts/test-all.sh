#!/usr/bin/env bash
# Runs every check and test of the project from a fresh clone. Installs what it needs.
#
# The two cores are kept busy: the Rust build runs while the Python and Node environments download
# (mostly waiting on the network), clippy lints the workspace as the test build compiles it (no
# second build), the image builds beside the Rust tests, and the Python and Node tests run side by
# side (mostly waiting on hubs, servers and browsers). What only a release needs (the arm64 cross
# build, the SBOMs, the two-platform image) is scripts/release.sh's; this checks the release path on
# what it built (`release.sh --check`). The quick loop for a change is scripts/test-quick.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
# Each step says the disk left too: CI's disk is not large, and running out reads as a failed test.
# Each step's start is kept too: the end prints the seconds each took (the README's table).
steps=(); marks=()
step() {
    steps+=("$1"); marks+=("$(date +%s)")
    printf '\n== %s (%ss, %s free)\n' "$*" "$(( $(date +%s) - started ))" "$(df -h --output=avail . | tail -1 | tr -d ' ')"
}
summary() {
    local now i end
    now=$(date +%s)
    echo; echo "seconds per step:"
    for i in "${!steps[@]}"; do
        end=${marks[$((i + 1))]:-$now}
        printf '%6s  %s\n' "$(( end - marks[i] ))" "${steps[$i]%%:*}"
    done
    printf '%6s  total\n' "$(( now - started ))"
}
trap summary EXIT
apt_install() { # package...
    if [ "$(id -u)" = 0 ]; then apt-get update -qq && env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null;
    else sudo apt-get update -qq && sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null; fi
}
mkdir -p target

step "toolchain"
command -v cargo >/dev/null || { echo "cargo is required (rustup)"; exit 1; }
rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
cargo --version
# A fresh clone builds once: incremental state would only take disk (over 1 GB) that CI may not have.
if [ "${CI:-}" = true ]; then export CARGO_INCREMENTAL=0; fi
# The README walkthrough test runs curl, as a newcomer would; the image and release tests read the
# image layouts with umoci and skopeo; the release test pushes the chart to a registry of its own
# (docker-registry) and pulls it back; the replication test replicates over SFTP to an sshd on
# loopback (openssh-server); the restore runbook fills its manifest with envsubst (gettext-base);
# the alert rules are evaluated by Prometheus' promtool (prometheus; where systemd runs, Debian
# starts the package's own service: the tests never use it).
# Installed first, so nothing runs apt beside anything else.
need=()
for pair in curl:curl umoci:umoci skopeo:skopeo docker-registry:docker-registry /usr/sbin/sshd:openssh-server envsubst:gettext-base \
        promtool:prometheus; do
    command -v "${pair%%:*}" >/dev/null || need+=("${pair#*:}")
done
[ ${#need[@]} -eq 0 ] || apt_install "${need[@]}"
bash scripts/ensure-chromium.sh

step "format, no import circle, ARCHITECTURE.md and CODE-MAP.md true to the tree, sizes current, files and functions within their limits"
cargo fmt --all -- --check
python3 scripts/check_imports.py
python3 scripts/check_architecture.py
python3 scripts/code_map.py --check
python3 scripts/check_limits.py
python3 scripts/sizes.py --check
python3 scripts/security_table.py --check

# The Node packages (better-sqlite3 compiled from source: a minute of one core) install beside the
# component's build, whose last minutes (whole-program optimisation) use one core.
(bash scripts/build-js.sh --deps > target/js-deps.log 2>&1) &
js_deps_pid=$!

step "wasm components (shipped and fault-injection), beside them the Node packages"
bash scripts/build-wasm.sh --fault

step "javascript build: the component through jco (js/gen), embedded by quota-hub's admin page"
js_deps_rc=0
wait "$js_deps_pid" || js_deps_rc=$?
cat target/js-deps.log
[ "$js_deps_rc" -eq 0 ] || { echo "installing js/'s packages failed (exit $js_deps_rc)"; exit "$js_deps_rc"; }
bash scripts/build-js.sh

# The Python environments (JupyterHub 6, and 5 as z2jh ships it), the wheels and the hubs' proxy,
# beside the Rust build: mostly downloads. Their log is printed when the Python stage starts.
(bash scripts/python-env.sh && PYENV=target/pyenv-jh5 REQUIREMENTS=python/requirements-test-jh5.txt bash scripts/python-env.sh) \
    > target/python-env.log 2>&1 &
env_pid=$!

# The PostgreSQL suites are test targets behind the `pg-tests` features; every Rust step turns them
# on, so the workspace compiles once (not again with other features for those suites).
pg_features=(--features quota-host/pg-tests,quota-hub/pg-tests)

# Clippy lints the workspace's crates as they are built for the tests: clippy-driver compiles them
# (RUSTC_WORKSPACE_WRAPPER, `cargo clippy`'s own mechanism, with its `-D warnings`), so there is no
# second, check-only build of the workspace (it took 8 to 11 minutes of the run). Every target
# clippy's `--all-targets` lints is built: the benches and the example too.
clippy_env=(RUSTC_WORKSPACE_WRAPPER="$(command -v clippy-driver)" CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__")

step "Rust build: the workspace and every target of it, linted by clippy (-D warnings) as it builds"
# --timings: target/cargo-timings/ says which crates the build spends its minutes on.
env "${clippy_env[@]}" cargo test --workspace --locked "${pg_features[@]}" --all-targets --no-run --timings

# The image's static release build (a second build of the dependencies, for musl) runs beside the
# tests at a lower priority: cargo runs one test executable at a time, and most take one core.
(nice -n 10 bash scripts/build-image.sh > target/build-image.log 2>&1) &
image_pid=$!

step "Rust tests, the PostgreSQL suites against a real server (scripts/with-postgres.sh); beside them the image's build"
env "${clippy_env[@]}" bash scripts/with-postgres.sh cargo test --workspace --locked "${pg_features[@]}"

step "container image without an engine: a static quota-hub in an OCI layout (scripts/build-image.sh), built beside the tests"
image_rc=0
wait "$image_pid" || image_rc=$?
cat target/build-image.log
[ "$image_rc" -eq 0 ] || { echo "building the image failed (exit $image_rc)"; exit "$image_rc"; }
if [ "${CI:-}" = true ]; then
    # A CI clone is thrown away and its disk is not large. The steps after this one run what is
    # built (the test build's quota-hub among them), so the test executables (~1.2 GB) go.
    # Binaries cargo hardlinks into target/debug have two links and stay.
    find target/debug/deps -maxdepth 1 -type f -perm -u+x -links 1 ! -name '*.so' -delete
fi

step "the Python and Node environments, made beside the Rust build"
env_rc=0
wait "$env_pid" || env_rc=$?
cat target/python-env.log
[ "$env_rc" -eq 0 ] || { echo "making the Python environments failed (exit $env_rc)"; exit "$env_rc"; }

step "python: the engine in JupyterHub (python/); beside it javascript: the Node bridge (js/), and clippy on the component's target"
# The Python and Node tests mostly wait on real hubs, servers and browsers. Clippy on the guest's
# own target (wasm32, with the fault-injection routes: what the host build does not compile) takes
# the CPU they leave. The Node tests' and clippy's logs are printed after the Python run.
(nice -n 15 cargo clippy -p quota-wasm --target wasm32-unknown-unknown --features fault-injection --locked -- -D warnings \
    > target/clippy.log 2>&1) &
clippy_pid=$!
(bash scripts/test-js.sh > target/test-js.log 2>&1) &
js_pid=$!
py_rc=0
QUOTA_RELEASE_TESTS_LATER=1 QUOTA_PYTHON_ENV_READY=1 bash scripts/test-python.sh || py_rc=$?
js_rc=0
wait "$js_pid" || js_rc=$?
step "javascript: the Node bridge (js/), run beside the Python tests (exit $js_rc)"
cat target/test-js.log
clippy_rc=0
wait "$clippy_pid" || clippy_rc=$?
step "clippy on the component's target, run beside the tests (exit $clippy_rc)"
cat target/clippy.log
[ "$py_rc" -eq 0 ] || { echo "the Python tests failed (exit $py_rc)"; exit "$py_rc"; }
[ "$js_rc" -eq 0 ] || exit "$js_rc"
[ "$clippy_rc" -eq 0 ] || exit "$clippy_rc"

step "the release path on what was built (scripts/release.sh --check: wheels, npm package, the amd64 binary and image, chart, checksums) and its tests"
DIST=dist bash scripts/release.sh --check
(cd python/tests && QUOTA_RELEASE_CHECK=1 ../../target/pyenv/bin/python -m pytest -q -p no:cacheprovider -m "not release_only" test_release.py)

step "API fuzzing: schemathesis against a real quota-hub serve, 25 examples per operation and phase (scripts/fuzz-api.sh)"
# The quota-hub the Rust tests built (with the test features: building it again without them would
# recompile the server).
QUOTA_HUB_BIN=target/debug/quota-hub bash scripts/fuzz-api.sh 25

# The pages as the tests saw them (docs/screenshots.md): kept for a person to look at.
step "screenshots of every page at 1280 and 760 px (target/test-artifacts/screenshots, docs/screenshots.md)"
shots=target/test-artifacts/screenshots
if [ -d "$shots" ]; then ls "$shots" | sed 's/^/  /'; echo "$(ls "$shots" | wc -l) screenshots in $shots"; else echo "no screenshots (no page test ran)"; fi
