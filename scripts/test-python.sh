#!/usr/bin/env bash
# The Python integration (python/): builds the wheel from this checkout (with the engine component
# inside), installs it into a virtualenv under target/ with a real JupyterHub, installs the real
# configurable-http-proxy from npm, and runs python/tests. Needs python3 (3.9+) with venv, and Node.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
venv=target/pyenv
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" || {
        echo "python3 -m venv failed: install Python's venv module (Debian: apt-get install python3-venv)"; exit 1; }
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r python/requirements-test.txt
# The wheel, as an operator would build it (`pip wheel ./python`), then installed from the file.
rm -rf target/python-dist
"$venv/bin/python" -m pip wheel -q --disable-pip-version-check --no-deps -w target/python-dist ./python
"$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps target/python-dist/jupyterhub_quota-*-py3-none-any.whl
"$venv/bin/python" -m pip install -q --disable-pip-version-check target/python-dist/jupyterhub_quota-*-py3-none-any.whl
(cd python/tests/node && npm ci --no-audit --no-fund --loglevel=error)
echo "python set-up took $(( $(date +%s) - started ))s"
# The tests import the installed package, not python/src.
cd python/tests
exec "../../$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
