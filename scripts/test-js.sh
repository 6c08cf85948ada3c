#!/usr/bin/env bash
# The JavaScript package (js/): installs it (better-sqlite3 is built from source against Node's own
# headers), transpiles the engine component with jco into js/gen, and runs `node --test`.
# Needs Node 20+ with npm, g++ and make, and the components (scripts/build-wasm.sh --fault); installs
# Debian's chromium for the browser test when it is missing.
set -euo pipefail
cd "$(dirname "$0")/../js"
bash ../scripts/ensure-chromium.sh
bash ../scripts/build-js.sh
node --test tests/
