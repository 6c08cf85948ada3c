#!/usr/bin/env bash
# The Python integration (python/): builds and installs the wheel into target/pyenv with a real
# JupyterHub 6 and the real configurable-http-proxy (scripts/python-env.sh), then runs python/tests
# (pytest arguments pass through), and beside them the same wheel in target/pyenv-jh5 with
# JupyterHub 5 (what z2jh ships) for the tests of what differs there. Needs python3 (3.9+) with
# venv, Node and npm, and the
# engine component (scripts/build-wasm.sh --fault; the wheel build makes the shipped one if missing).
# QUOTA_SKIP_JH5=1 skips the JupyterHub 5 run; pytest arguments skip it and the side runs.
# QUOTA_RELEASE_TESTS_LATER=1 leaves out test_release.py (dist/ is built after: scripts/test-all.sh).
# QUOTA_PYTHON_ENV_READY=1: both environments were made already (scripts/test-all.sh makes them
# beside the Rust build).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
full=""; if [ $# -eq 0 ] && [ -z "${QUOTA_SKIP_JH5:-}" ]; then full=1; fi
if [ -z "${QUOTA_PYTHON_ENV_READY:-}" ]; then
  bash scripts/python-env.sh
  [ -z "$full" ] || PYENV=target/pyenv-jh5 REQUIREMENTS=python/requirements-test-jh5.txt bash scripts/python-env.sh
fi
if [ -n "$full" ]; then
  target/pyenv-jh5/bin/python -c 'import jupyterhub, kubespawner; print("JupyterHub 5 env:", jupyterhub.__version__, "KubeSpawner", kubespawner.__version__)'
fi
bash scripts/ensure-chromium.sh   # the hub page tests run in headless Chromium
echo "python set-up took $(( $(date +%s) - started ))s"

# The hub suites mostly wait on real hubs, proxies, servers and browsers (the JupyterHub 5 run used
# 48 % of one core over its 455 s: /usr/bin/time), so the long runs go beside the main one, each
# with its own PostgreSQL and log, printed after it: the extension/warnings test (about 4 minutes of
# a real server's clock), the hub suites on JupyterHub 6, and the same on JupyterHub 5.
side_pids=(); side_logs=()
beside() { # name command...: runs in python/tests, beside the main run
  local log="target/python-$1.log"
  (cd python/tests && "${@:2}" > "../../$log" 2>&1) &
  side_pids+=($!); side_logs+=("$log")
}
# The tests import the installed package, not python/src. The PostgreSQL tests need a server:
# scripts/with-postgres.sh starts a throwaway one unless QUOTA_TEST_PG_URL names one already.
with_pg=(); [ -n "${QUOTA_TEST_PG_URL:-}" ] || with_pg=(bash ../../scripts/with-postgres.sh)
pytest=(../../target/pyenv/bin/python -m pytest -q -p no:cacheprovider "$@")
# The hub suites: what runs on JupyterHub 6 and again on 5 (what z2jh ships), since it differs
# there: the consecutive-failure limit, KubeSpawner, the hub's templates and metrics, the hub suite,
# a database outage under the hub, JupyterLab and the live balance.
hub_suites=(test_failure_limit.py test_storage_outage.py test_refusal_page.py test_kubespawner.py test_hub.py
    test_hub_pages.py test_hub_metrics.py test_hub_groups.py test_jupyterlab.py test_hub_live.py test_authorization.py
    test_user_reads.py)
# On JupyterHub 6 one of them runs in the main run instead of beside it, so the two take about as
# long (the JupyterHub 6 suites were the long pole: 720 s against the main run's 547, at 666cfb2).
in_main_run=(test_jupyterlab.py)
if [ $# -eq 0 ]; then
  side=()
  for f in "${hub_suites[@]}"; do [[ " ${in_main_run[*]} " == *" $f "* ]] || side+=("$f"); done
  beside hub-events ../../target/pyenv/bin/python -m pytest -q -p no:cacheprovider test_hub_events.py
  beside hub-suites "${with_pg[@]}" ../../target/pyenv/bin/python -m pytest -q -p no:cacheprovider --durations=10 "${side[@]}"
  pytest+=(--ignore=test_hub_events.py)
  # The slowest tests, printed at the end: where the clean run's long pole goes (README's table).
  pytest+=(--durations=15)
  for f in "${side[@]}"; do pytest+=(--ignore="$f"); done
fi
# On JupyterHub 5 the same suites run without three tests whose subject the hub's version does not
# touch (`pytest --durations=0` of these suites on JupyterHub 5, alone on 2 cores): the runtime
# limit's stop (a real minute of our own timer; every billing test stops through the hub), the
# group snapshot's rules (the course budget's page test keeps the hub's groups) and the event
# stream's keep-alive (our handler's clock; the page tests keep the navigation bar). Less to run on
# 2 cores leaves more CPU to the release's builds. JupyterLab's status bar and warning run on both
# (JupyterLab 4.5.11 there, 4.6.6 here): what the user reads in JupyterLab is checked on each hub.
jh5_only_on_6=(test_hub.py::test_a_server_is_stopped_when_its_runtime_is_over_and_billed_that_minute
    test_hub_groups.py::test_group_rules_and_restricted_accelerators_follow_the_hubs_groups
    test_hub_live.py::test_an_idle_stream_gets_keep_alive_comments)
if [ -n "$full" ]; then
  beside jh5 "${with_pg[@]}" ../../target/pyenv-jh5/bin/python -m pytest -q -p no:cacheprovider --durations=10 "${hub_suites[@]}" \
    "test_hub_events.py::test_the_banner_shows_unread_warnings_on_the_home_page_dismissed_and_remembered" \
    "${jh5_only_on_6[@]/#/--deselect=}"
fi
[ -z "${QUOTA_RELEASE_TESTS_LATER:-}" ] || pytest+=(--ignore=test_release.py)
main_rc=0
(cd python/tests && "${with_pg[@]}" "${pytest[@]}") || main_rc=$?
rc=$main_rc
for k in "${!side_pids[@]}"; do
  side_rc=0
  wait "${side_pids[$k]}" || side_rc=$?
  echo "${side_logs[$k]} (run beside the main run, exit $side_rc):"
  cat "${side_logs[$k]}"
  [ "$side_rc" -eq 0 ] || rc=$side_rc
done
exit "$rc"
