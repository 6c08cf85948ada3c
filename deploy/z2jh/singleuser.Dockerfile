# A z2jh single-user image with JupyterLab's quota extension (docs/z2jh.md, section 9): any
# JupyterLab 4 image, plus the jupyterlab-quota wheel. The wheel is the whole install (the
# labextension is prebuilt, the server extension turns itself on).
#   bash scripts/build-lab.sh
#   docker build -f deploy/z2jh/singleuser.Dockerfile -t registry.example.org/singleuser-quota:0.2.0 target/lab-dist
# (or the release's wheel: the folder holding jupyterlab_quota-<version>-py3-none-any.whl).
ARG BASE=quay.io/jupyterhub/k8s-singleuser-sample:4.4.0
FROM ${BASE}
# The image's own user, restored after the install (jovyan on z2jh's and docker-stacks' images).
ARG NB_UID=1000
# Into the image's own environment, as root: as the image's user, pip would install into
# ~/.local, which the home volume hides at run time. JupyterLab is raised to 4.5.11 (the oldest the
# extension's shared packages accept) only if the base image's is older.
USER root
COPY jupyterlab_quota-*-py3-none-any.whl /tmp/
RUN pip install --no-cache-dir "jupyterlab>=4.5.11,<5" /tmp/jupyterlab_quota-*-py3-none-any.whl \
 && rm /tmp/jupyterlab_quota-*-py3-none-any.whl
USER ${NB_UID}
