"""JupyterHub quota: the quota engine component in the hub's own process.

Two subpackages, imports pointing one way (`scripts/check_imports.py` checks it): ``host``, the
WebAssembly host (the component, its SQL bridges, the engine and its worker threads), usable
without JupyterHub; and ``hub``, the JupyterHub integration (the spawn gate, the routes and pages,
the timers and scheduler, the metrics, the command line), which uses ``host`` and is never used by
it.

In ``jupyterhub_config.py``::

    import jupyterhub_quota
    jupyterhub_quota.configure(c, values_file="values.yaml", db_url="sqlite:///var/lib/quota/quota.db")

:class:`QuotaEngine` is the engine itself, usable without JupyterHub.
"""

from .version import __version__
from .host.engine import (
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
    """Wires quota into a JupyterHub configuration: see :func:`jupyterhub_quota.hub.configure.configure`."""
    from .hub.configure import configure as _configure

    return _configure(c, **kwargs)
