"""jupyterlab-quota: a JupyterHub quota inside JupyterLab.

The labextension (src/index.js, built with @jupyterlab/builder into ``labextension/``) shows the
server's resource, time left, cost so far and balance in JupyterLab's status bar, a panel with
"Extend", and JupyterLab notifications for the user's quota events. It asks only this server
extension (``{base_url}quota/status``, ``quota/extend``, ``quota/events``), which calls the hub's
quota routes with the server's own ``JUPYTERHUB_API_TOKEN``: the token never reaches the browser.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.2.0"


def _jupyter_labextension_paths() -> list:
    return [{"src": "labextension", "dest": "jupyterlab-quota"}]


def _jupyter_server_extension_points() -> list:
    return [{"module": "jupyterlab_quota"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from .handlers import setup

    setup(serverapp)
