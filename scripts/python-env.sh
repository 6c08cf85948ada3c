#!/usr/bin/env bash
# Prepares a virtualenv with JupyterHub, the test tools and this checkout's jupyterhub-quota wheel
# (built with the engine component inside), plus the configurable-http-proxy from npm. Sourced by
# scripts/test-python.sh and scripts/hub-demo.sh.
#   PYENV (default target/pyenv): where; REQUIREMENTS (default python/requirements-test.txt): what.
# The JupyterHub 5 run uses PYENV=target/pyenv-jh5 REQUIREMENTS=python/requirements-test-jh5.txt.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv=${PYENV:-target/pyenv}
requirements=${REQUIREMENTS:-python/requirements-test.txt}
pip_q=(-q --disable-pip-version-check)
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" || {
        echo "python3 -m venv failed: install Python's venv module (Debian: apt-get install python3-venv)"; exit 1; }
fi
"$venv/bin/python" -m pip install "${pip_q[@]}" -r "$requirements" -c python/constraints-test.txt
# The wheel, as an operator would build it (`pip wheel ./python`), then installed from the file.
dist=target/python-dist
rm -rf "$dist"
"$venv/bin/python" -m pip wheel "${pip_q[@]}" --no-deps -w "$dist" ./python
"$venv/bin/python" -m pip install "${pip_q[@]}" --force-reinstall --no-deps "$dist"/jupyterhub_quota-*-py3-none-any.whl
"$venv/bin/python" -m pip install "${pip_q[@]}" -c python/constraints-test.txt "$dist"/jupyterhub_quota-*-py3-none-any.whl
# JupyterLab's quota extension (lab/), installed from its wheel as a single-user image would: the
# test hubs' servers are real JupyterLab servers with it.
bash scripts/build-lab.sh "$venv/bin/python" >/dev/null
# Again over an installed one of the same version (a rebuilt wheel has the same name).
"$venv/bin/python" -m pip install "${pip_q[@]}" --force-reinstall --no-deps target/lab-dist/jupyterlab_quota-*-py3-none-any.whl
"$venv/bin/python" -m pip install "${pip_q[@]}" -c python/constraints-test.txt target/lab-dist/jupyterlab_quota-*-py3-none-any.whl
(cd tests/proxy && npm ci --no-audit --no-fund --loglevel=error)
