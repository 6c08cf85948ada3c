# A working JupyterHub with quota, for trying it out on one machine (README: "Quota inside
# JupyterHub"). DummyAuthenticator (any password) and the simple local-process spawner: not for
# production. Run from the repository root:
#
#     bash scripts/hub-demo.sh
#
# Then sign in at http://127.0.0.1:8000 as `admin` (a hub admin) or any other name.
import os
from pathlib import Path

import jupyterhub_quota

here = Path(__file__).resolve().parent
state = Path(os.environ.get("QUOTA_DEMO_STATE", here / "state"))

c = get_config()  # noqa: F821 - provided by JupyterHub when it loads this file

c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = int(os.environ.get("QUOTA_DEMO_PORT", "8000"))
c.JupyterHub.hub_ip = "127.0.0.1"
# The hub's own port and the proxy's API port: JupyterHub's 8081 and 8001 unless set (a second hub
# on the same machine needs others).
c.JupyterHub.hub_port = int(os.environ.get("QUOTA_DEMO_HUB_PORT", "8081"))
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{int(os.environ.get('QUOTA_DEMO_PROXY_API_PORT', '8001'))}"
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.pid_file = str(state / "jupyterhub-proxy.pid")

c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.admin_users = {"admin"}
c.Authenticator.allow_all = True
c.JupyterHub.spawner_class = "simple"
c.Spawner.notebook_dir = str(state / "notebooks")
c.Spawner.default_url = "/tree"
if os.geteuid() == 0:
    c.Spawner.args = ["--allow-root"]
c.JupyterHub.allow_named_servers = True

# Quota: the values file quota-hub reads, and the quota database beside the hub's own.
jupyterhub_quota.configure(
    c,
    values_file=here / "values.yaml",
    db_url=f"sqlite://{state / 'quota.sqlite'}",
)
