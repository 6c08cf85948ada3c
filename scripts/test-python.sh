#!/usr/bin/env bash
# The Python integration (python/): builds and installs the wheel into target/pyenv with a real
# JupyterHub and the real configurable-http-proxy (scripts/python-env.sh), then runs python/tests
# (pytest arguments pass through). Needs python3 (3.9+) with venv, Node and npm, and the engine
# component (scripts/build-wasm.sh --fault; the wheel build makes the shipped one if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
bash scripts/python-env.sh
bash scripts/ensure-chromium.sh   # the hub page tests run in headless Chromium
echo "python set-up took $(( $(date +%s) - started ))s"
# The tests import the installed package, not python/src. The PostgreSQL tests need a server:
# scripts/with-postgres.sh starts a throwaway one unless QUOTA_TEST_PG_URL names one already.
cd python/tests
pytest=(../../target/pyenv/bin/python -m pytest -q -p no:cacheprovider "$@")
if [ -n "${QUOTA_TEST_PG_URL:-}" ]; then exec "${pytest[@]}"; fi
exec bash ../../scripts/with-postgres.sh "${pytest[@]}"
