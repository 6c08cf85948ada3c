"""The configuration every test hub starts from (support/hub_process.py fills the environment): loopback ports, the real
configurable-http-proxy, a SQLite hub database in the test's folder, DummyAuthenticator (`admin`
is a hub admin), and three services: `test-admin` (the built-in admin role), `quota-sessions`
(only `custom:quota:sessions`) and `quota-cron` (only `custom:quota:refresh`, as a CronJob's)."""

import os
from pathlib import Path


def base(c) -> Path:
    env = os.environ
    state = Path(env["QT_STATE"])
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
    if env.get("QT_FAILURE_LIMIT"):
        c.Spawner.consecutive_failure_limit = int(env["QT_FAILURE_LIMIT"])

    c.JupyterHub.authenticator_class = "dummy"
    c.Authenticator.admin_users = {"admin"}
    c.Authenticator.allow_all = True
    c.JupyterHub.allow_named_servers = True

    c.JupyterHub.services = [
        {"name": "test-admin", "api_token": env["QT_ADMIN_TOKEN"]},
        {"name": "quota-sessions", "api_token": env["QT_SESSIONS_TOKEN"]},
        {"name": "quota-cron", "api_token": env["QT_CRON_TOKEN"]},
    ]
    c.JupyterHub.load_roles = [
        {"name": "admin", "services": ["test-admin"]},
        {"name": "quota-sessions", "scopes": ["custom:quota:sessions"], "services": ["quota-sessions"]},
        {"name": "quota-cron", "scopes": ["custom:quota:refresh"], "services": ["quota-cron"]},
    ]
    return state
