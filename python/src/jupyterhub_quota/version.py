"""The installed package's version: one version for every artefact (the repository's VERSION).
Its own module, so the JupyterHub integration reads it without importing the package's
``__init__`` (which hands ``configure`` on from ``hub``: that would be a circle)."""

from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("jupyterhub-quota")
except PackageNotFoundError:  # a source tree on sys.path, not installed
    __version__ = "0+unknown"
