# The Zero to JupyterHub hub image with jupyterhub-quota: z2jh's own hub image plus the wheel
# (docs/z2jh.md). The build context is a folder holding only the wheel (a release's, or built):
#
#     bash scripts/build-wasm.sh && bash scripts/build-js.sh
#     pip wheel --no-deps -w target/wheels ./python
#     docker build -f deploy/z2jh/Dockerfile -t registry.example.org/hub-quota:4.4.0-quota-0.2.0 target/wheels
#
# With PostgreSQL for the quota database: --build-arg EXTRAS=postgres.
# Then set hub.image.name and hub.image.tag in the chart's values (examples/z2jh/config.yaml).
ARG Z2JH_VERSION=4.4.0
FROM quay.io/jupyterhub/k8s-hub:${Z2JH_VERSION}

# The image runs as jovyan (uid 1000); packages go into the system site-packages as root.
USER root
COPY jupyterhub_quota-*-py3-none-any.whl /tmp/wheels/
# The package's extras to install with it, comma-separated: `postgres` for db_url="postgresql://..."
# (docker build --build-arg EXTRAS=postgres ...).
ARG EXTRAS=""
# Only the wheel and what it needs beyond the image (wasmtime); the image's own pins (JupyterHub,
# KubeSpawner, PyYAML) stay as they are, or pip fails here.
RUN wheel=$(ls /tmp/wheels/jupyterhub_quota-*-py3-none-any.whl) \
 && pip install --no-cache-dir "${wheel}${EXTRAS:+[$EXTRAS]}" \
 && rm -rf /tmp/wheels \
 && python -c "import jupyterhub_quota, jupyterhub; print('jupyterhub-quota in JupyterHub', jupyterhub.__version__)"
USER 1000
