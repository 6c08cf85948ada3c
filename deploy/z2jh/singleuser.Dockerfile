# A z2jh single-user image with JupyterLab's quota extension (docs/z2jh.md, section 9): any
# JupyterLab 4 image, plus the jupyterlab-quota wheel. The wheel is the whole install (the
# labextension is prebuilt, the server extension turns itself on).
#   docker build -f deploy/z2jh/singleuser.Dockerfile -t registry.example.org/singleuser-quota:0.2.0 dist
ARG BASE=quay.io/jupyterhub/k8s-singleuser-sample:4.4.0
FROM ${BASE}
COPY jupyterlab_quota-*-py3-none-any.whl /tmp/
RUN pip install --no-cache-dir /tmp/jupyterlab_quota-*-py3-none-any.whl \
 && rm /tmp/jupyterlab_quota-*-py3-none-any.whl
