# The Zero to JupyterHub hub image with jupyterhub-quota: z2jh's own hub image plus this version's
# wheel (docs/z2jh.md). The release workflow builds and pushes it for amd64 and arm64 as
# ghcr.io/quota-engine/hub-quota:<z2jh>-quota-<version> (.github/workflows/release.yml); to build
# it yourself, the build context is a folder holding the wheel (a release's, or built):
#
#     bash scripts/build-wasm.sh && bash scripts/build-js.sh
#     pip wheel --no-deps -w target/wheels ./python
#     docker build -f deploy/z2jh/hub.Dockerfile -t registry.example.org/hub-quota:4.4.0-quota-0.2.0 target/wheels
#
# The folder may hold other versions' wheels too: the one copied is QUOTA_VERSION's (the version
# in VERSION; --build-arg QUOTA_VERSION=... for another). With PostgreSQL for the quota database:
# --build-arg EXTRAS=postgres (the released image has it). Then set hub.image.name and
# hub.image.tag in the chart's values (examples/z2jh/config.yaml).
ARG Z2JH_VERSION=4.4.0
FROM quay.io/jupyterhub/k8s-hub:${Z2JH_VERSION}

# The version of jupyterhub-quota to install: its wheel must be in the build context.
ARG QUOTA_VERSION=0.2.0
# The image runs as jovyan (uid 1000); packages go into the system site-packages as root.
USER root
COPY jupyterhub_quota-${QUOTA_VERSION}-py3-none-any.whl /tmp/wheels/
# The package's extras to install with it, comma-separated: `postgres` for db_url="postgresql://..."
# (docker build --build-arg EXTRAS=postgres ...).
ARG EXTRAS=""
# Only the wheel and what it needs beyond the image (wasmtime); the image's own pins (JupyterHub,
# KubeSpawner, PyYAML) stay as they are, or pip fails here.
RUN wheel=/tmp/wheels/jupyterhub_quota-${QUOTA_VERSION}-py3-none-any.whl \
 && pip install --no-cache-dir "${wheel}${EXTRAS:+[$EXTRAS]}" \
 && rm -rf /tmp/wheels \
 && python -c "import jupyterhub_quota, jupyterhub; print('jupyterhub-quota', jupyterhub_quota.__version__, 'in JupyterHub', jupyterhub.__version__)"
USER 1000
