#!/usr/bin/env bash
# The whole release's checks (python/tests/test_release.py: both platforms of the image, the arm64
# binary under qemu-user, the SBOMs) on what scripts/release.sh wrote into dist/, in a virtualenv of
# the test tools (target/release-test). The release workflow runs it after release.sh; the README's
# test command checks the release path on one platform instead (`release.sh --check`).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/release-test
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r python/requirements-test.txt -c python/constraints-test.txt
cd python/tests
exec ../../"$venv"/bin/python -m pytest -q -p no:cacheprovider test_release.py
