#!/usr/bin/env bash
# The Python integration (python/): builds and installs the wheel into target/pyenv with a real
# JupyterHub 6 and the real configurable-http-proxy (scripts/python-env.sh), then runs python/tests
# (pytest arguments pass through); then the same wheel in target/pyenv-jh5 with JupyterHub 5 (what
# z2jh ships) for the tests of what differs there: the consecutive-failure limit, KubeSpawner, the
# hub's templates and metrics, the hub suite, a database outage under the hub. Needs python3 (3.9+) with venv, Node and npm, and the
# engine component (scripts/build-wasm.sh --fault; the wheel build makes the shipped one if missing).
# QUOTA_SKIP_JH5=1 skips the JupyterHub 5 run.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
bash scripts/python-env.sh
bash scripts/ensure-chromium.sh   # the hub page tests run in headless Chromium
echo "python set-up took $(( $(date +%s) - started ))s"
# The tests import the installed package, not python/src. The PostgreSQL tests need a server:
# scripts/with-postgres.sh starts a throwaway one unless QUOTA_TEST_PG_URL names one already.
pytest=(../../target/pyenv/bin/python -m pytest -q -p no:cacheprovider "$@")
events_pid=""
if [ $# -eq 0 ]; then
  # The extension/warnings test waits about 4 minutes for a real server's clock (a 3-minute server,
  # extended): it runs beside the rest, which it barely loads, instead of after it.
  (cd python/tests && ../../target/pyenv/bin/python -m pytest -q -p no:cacheprovider test_hub_events.py \
    > ../../target/hub-events-test.log 2>&1) &
  events_pid=$!
  pytest+=(--ignore=test_hub_events.py)
fi
if [ -n "${QUOTA_TEST_PG_URL:-}" ]; then (cd python/tests && "${pytest[@]}")
else (cd python/tests && bash ../../scripts/with-postgres.sh "${pytest[@]}"); fi
if [ -n "$events_pid" ]; then
  events_rc=0
  wait "$events_pid" || events_rc=$?
  echo "test_hub_events.py (run beside the rest):"
  cat target/hub-events-test.log
  [ "$events_rc" -eq 0 ] || exit "$events_rc"
fi

if [ -n "${QUOTA_SKIP_JH5:-}" ] || [ $# -gt 0 ]; then exit 0; fi
started=$(date +%s)
PYENV=target/pyenv-jh5 REQUIREMENTS=python/requirements-test-jh5.txt bash scripts/python-env.sh
echo "python (JupyterHub 5) set-up took $(( $(date +%s) - started ))s"
cd python/tests
../../target/pyenv-jh5/bin/python -c 'import jupyterhub, kubespawner; print("JupyterHub", jupyterhub.__version__, "KubeSpawner", kubespawner.__version__)'
jh5=(../../target/pyenv-jh5/bin/python -m pytest -q -p no:cacheprovider
    test_failure_limit.py test_storage_outage.py test_refusal_page.py test_kubespawner.py test_hub.py test_hub_pages.py test_hub_metrics.py test_hub_groups.py test_jupyterlab.py test_hub_live.py
    "test_hub_events.py::test_the_banner_shows_unread_warnings_on_the_home_page_dismissed_and_remembered")
if [ -n "${QUOTA_TEST_PG_URL:-}" ]; then exec "${jh5[@]}"; else exec bash ../../scripts/with-postgres.sh "${jh5[@]}"; fi
