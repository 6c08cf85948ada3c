"""JupyterHub quota: the quota engine component in the hub's own process.

In ``jupyterhub_config.py``::

    import jupyterhub_quota
    jupyterhub_quota.configure(c, values_file="values.yaml", db_url="sqlite:///var/lib/quota/quota.db")

:class:`QuotaEngine` is the engine itself, usable without JupyterHub.
"""

from importlib.metadata import PackageNotFoundError, version as _version

try:
    #: The installed package's version (one version for every artefact: the repository's VERSION).
    __version__ = _version("jupyterhub-quota")
except PackageNotFoundError:  # a source tree on sys.path, not installed
    __version__ = "0+unknown"

from .engine import (  # noqa: E402
    COMPONENT_PATH,
    Caller,
    Component,
    ConfigError,
    ConfigSummary,
    EngineError,
    QuotaEngine,
    QuotaError,
    Response,
    StorageError,
)

__all__ = [
    "__version__",
    "COMPONENT_PATH",
    "Caller",
    "Component",
    "ConfigError",
    "ConfigSummary",
    "EngineError",
    "QuotaEngine",
    "QuotaError",
    "Response",
    "StorageError",
    "configure",
]


def configure(c, **kwargs):
    """Wires quota into a JupyterHub configuration: see :func:`jupyterhub_quota.configure.configure`."""
    from .configure import configure as _configure

    return _configure(c, **kwargs)
