#!/usr/bin/env bash
# A JupyterHub with quota on http://127.0.0.1:8000 (examples/jupyterhub/): DummyAuthenticator (any
# password; `admin` is a hub admin), the simple local-process spawner, the quota database in
# examples/jupyterhub/state/. Installs what it needs into target/pyenv. Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/python-env.sh
state="${QUOTA_DEMO_STATE:-$PWD/examples/jupyterhub/state}"
mkdir -p "$state/notebooks"
export QUOTA_DEMO_STATE="$state"
export PATH="$PWD/python/tests/node/node_modules/.bin:$PWD/target/pyenv/bin:$PATH"
echo "Admin page: http://127.0.0.1:8000/hub/admin/users (log in as admin); spawn form: http://127.0.0.1:8000/hub/spawn"
cd "$state"
exec jupyterhub -f "$OLDPWD/examples/jupyterhub/jupyterhub_config.py"
