#!/usr/bin/env bash
# Prepares target/pyenv: a virtualenv with JupyterHub, the test tools (python/requirements-test.txt)
# and this checkout's jupyterhub-quota wheel (built with the engine component inside), plus the
# configurable-http-proxy from npm. Sourced by scripts/test-python.sh and scripts/hub-demo.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv=target/pyenv
pip_q=(-q --disable-pip-version-check)
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" || {
        echo "python3 -m venv failed: install Python's venv module (Debian: apt-get install python3-venv)"; exit 1; }
fi
"$venv/bin/python" -m pip install "${pip_q[@]}" -r python/requirements-test.txt
# The wheel, as an operator would build it (`pip wheel ./python`), then installed from the file.
rm -rf target/python-dist
"$venv/bin/python" -m pip wheel "${pip_q[@]}" --no-deps -w target/python-dist ./python
"$venv/bin/python" -m pip install "${pip_q[@]}" --force-reinstall --no-deps target/python-dist/jupyterhub_quota-*-py3-none-any.whl
"$venv/bin/python" -m pip install "${pip_q[@]}" target/python-dist/jupyterhub_quota-*-py3-none-any.whl
(cd python/tests/node && npm ci --no-audit --no-fund --loglevel=error)
