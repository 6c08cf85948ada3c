# The JupyterHub configuration of the integration tests (tests/hub.py fills the environment).
import json
import os
from pathlib import Path

import jupyterhub_quota

env = os.environ
state = Path(env["QT_STATE"])
c = get_config()  # noqa: F821

c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = int(env["QT_PORT"])
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(env["QT_HUB_PORT"])
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{env['QT_PROXY_API_PORT']}"
c.ConfigurableHTTPProxy.auth_token = env["QT_PROXY_TOKEN"]
c.ConfigurableHTTPProxy.pid_file = str(state / "proxy.pid")
c.ConfigurableHTTPProxy.should_start = True
c.JupyterHub.cleanup_servers = env.get("QT_CLEANUP_SERVERS", "1") == "1"
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret = bytes.fromhex(env["QT_COOKIE_SECRET"])
c.JupyterHub.log_level = "DEBUG" if env.get("QT_DEBUG") else "INFO"

c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.admin_users = {"admin"}
c.Authenticator.allow_all = True
c.JupyterHub.spawner_class = "simple"
c.Spawner.notebook_dir = str(state)
c.Spawner.args = ["--allow-root"] if os.geteuid() == 0 else []
c.Spawner.http_timeout = 60
c.Spawner.start_timeout = 60
c.JupyterHub.allow_named_servers = True

# The test's admin: a service with the built-in admin role, and a plain service for scope checks.
c.JupyterHub.services = [
    {"name": "test-admin", "api_token": env["QT_ADMIN_TOKEN"]},
    {"name": "quota-sessions", "api_token": env["QT_SESSIONS_TOKEN"]},
]
c.JupyterHub.load_roles = [
    {"name": "admin", "services": ["test-admin"]},
    {"name": "quota-sessions", "scopes": ["custom:quota:sessions"], "services": ["quota-sessions"]},
]

if env.get("QT_EXTRA_PRE_SPAWN"):
    # A hook the operator had already set: configure() must keep it (and run it first).
    def earlier_hook(spawner):
        (state / "earlier-hook-ran").write_text(spawner.user.name)
        if spawner.user.name == "broken":
            # This user's server cannot start: the spawn fails after the quota gate allowed it.
            spawner.cmd = [str(state / "no-such-singleuser-command")]

    c.Spawner.pre_spawn_hook = earlier_hook

# The spawn page's form (the original's keys); its posts arrive as lists of strings.
c.Spawner.options_form = """
<input name="runtime_minutes" value="20"><select name="gpu_selection"><option value="">CPU</option>
<option value="phx">PHX</option></select>
"""

kwargs = json.loads(env.get("QT_QUOTA_KWARGS", "{}"))
jupyterhub_quota.configure(
    c,
    values_file=env["QT_VALUES"],
    db_url=f"sqlite://{state / 'quota.sqlite'}",
    **kwargs,
)
