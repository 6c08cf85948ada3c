#!/usr/bin/env bash
# Builds jupyterlab-quota (lab/): its npm packages from the registry (npm ci), the prebuilt
# labextension with the JupyterLab builder (@jupyter/builder, against @jupyterlab/core-meta: the
# shared JupyterLab packages the extension uses from JupyterLab itself), then the wheel into
# target/lab-dist. The extension bundles js/pages/words.js (the pages' words). Argument: the Python to build the wheel with (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
py=${1:-python3}
# The same sources built already (the JupyterHub 5 environment asks again): nothing to do.
stamp=$(cd lab && cat package.json package-lock.json pyproject.toml src/*.js style/*.css jupyterlab_quota/*.py \
    jupyter-config/*/*.json ../js/pages/words.js | sha256sum | cut -c1-16)
if [ -f "target/lab-dist/$stamp" ] && ls target/lab-dist/jupyterlab_quota-*.whl >/dev/null 2>&1; then
    ls target/lab-dist/jupyterlab_quota-*.whl; exit 0
fi
(cd lab && npm ci --no-audit --no-fund --loglevel=error)
rm -rf lab/jupyterlab_quota/labextension
(cd lab && node node_modules/@jupyter/builder/lib/build-labextension.js \
    --core-package-file node_modules/@jupyterlab/core-meta/core.package.json .)
rm -rf target/lab-dist
"$py" -m pip wheel -q --disable-pip-version-check --no-deps -w target/lab-dist ./lab
touch "target/lab-dist/$stamp"
ls target/lab-dist
