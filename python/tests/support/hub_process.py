"""A real JupyterHub (from PyPI) with the real configurable-http-proxy (from npm), the simple
local-process spawner and the quota integration, on loopback ports, started and stopped by a test."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Optional

#: python/tests/support: the hub configurations and values files of the tests.
HERE = Path(__file__).resolve().parent
#: The real configurable-http-proxy, from npm (tests/proxy, installed by scripts/python-env.sh).
CHP_BIN = HERE.parents[2] / "tests" / "proxy" / "node_modules" / ".bin"

#: How long the hub, a spawn or a stop may take before a test gives up (the machine may be busy).
DEADLINE_S = 120.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what: str, check, deadline: float = DEADLINE_S, every: float = 0.2) -> Any:
    """Polls `check()` until it returns something truthy; fails the test after `deadline`."""
    end = time.monotonic() + deadline
    while True:
        v = check()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every)


class Hub:
    def __init__(
        self,
        state: Path,
        values: Path,
        quota_kwargs: Optional[dict] = None,
        extra_env: Optional[dict] = None,
        config: Path = HERE / "hub_config.py",
    ):
        self.state = state
        self.config = config
        self.state.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.admin_token = secrets.token_hex(16)
        self.sessions_token = secrets.token_hex(16)
        self.cron_token = secrets.token_hex(16)
        self.env = dict(os.environ)
        self.env.update(
            QT_STATE=str(state),
            QT_PORT=str(self.port),
            QT_HUB_PORT=str(free_port()),
            QT_PROXY_API_PORT=str(free_port()),
            QT_PROXY_TOKEN=secrets.token_hex(16),
            QT_COOKIE_SECRET=secrets.token_hex(32),
            QT_ADMIN_TOKEN=self.admin_token,
            QT_SESSIONS_TOKEN=self.sessions_token,
            QT_CRON_TOKEN=self.cron_token,
            QT_VALUES=str(values),
            QT_QUOTA_KWARGS=json.dumps(quota_kwargs or {}),
            PATH=f"{CHP_BIN}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        )
        self.env.update(extra_env or {})
        self.proc: Optional[subprocess.Popen] = None
        self.log_path = state / "hub.log"
        self.user_tokens: dict[str, str] = {}

    # Life cycle

    def start(self, deadline: float = DEADLINE_S) -> "Hub":
        """Starts the hub and waits until it answers (`deadline`: longer for a hub of many users)."""
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(self.config)],
            cwd=self.state, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        wait_for("the hub to answer", self._up, deadline)
        return self

    def exited(self) -> Optional[int]:
        """The hub's exit status once it has exited by itself, else None."""
        return None if self.proc is None else self.proc.poll()

    def _up(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise AssertionError(f"the hub exited with {self.proc.returncode}:\n{self.log()[-4000:]}")
        try:
            return self.api("GET", "/hub/api/")[0] == 200
        except OSError:
            return False

    def stop(self) -> bool:
        """Stops the hub (SIGTERM, as an operator's restart does); single-user servers keep running
        unless `cleanup_servers` stops them. False when the hub had to be killed: it did not exit
        on SIGTERM within the deadline."""
        if self.proc is None:
            return True
        self.proc.send_signal(signal.SIGTERM)
        exited = True
        try:
            self.proc.wait(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            exited = False
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.proc = None
        self._stop_orphaned_proxy()
        return exited

    def _stop_orphaned_proxy(self) -> None:
        """The proxy of a hub that exited without stopping it: a hub that stops itself at the
        consecutive-failure limit leaves its configurable-http-proxy running (in a session of its
        own, with no pid file left), one per such test. Found by the public port it serves."""
        mine = f"--port\0{self.port}\0".encode()
        for proc in Path("/proc").iterdir():
            with contextlib.suppress(OSError, ValueError):
                cmdline = (proc / "cmdline").read_bytes()
                if b"configurable-http-proxy" in cmdline and mine in cmdline:
                    os.kill(int(proc.name), signal.SIGTERM)

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    # HTTP

    def api(self, method: str, path: str, token: Optional[str] = None, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if token:
            req.add_header("Authorization", f"token {token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=DEADLINE_S) as r:
                raw = r.read()
                status = r.status
        except urllib.error.HTTPError as e:
            raw, status = e.read(), e.code
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode("utf-8", "replace")

    def admin(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        return self.api(method, path, self.admin_token, body)

    def token_for(self, user: str) -> str:
        """A token of `user` (created through the hub's API; the user is created if needed)."""
        if user not in self.user_tokens:
            self.admin("POST", f"/hub/api/users/{user}")
            status, body = self.admin("POST", f"/hub/api/users/{user}/tokens", {"note": "quota test"})
            assert status == 201, (status, body)
            self.user_tokens[user] = body["token"]
        return self.user_tokens[user]

    # Servers

    def server_path(self, user: str, server: str = "") -> str:
        return f"/hub/api/users/{user}/server" if not server else f"/hub/api/users/{user}/servers/{server}"

    def spawn(self, user: str, options: Any = None, server: str = "") -> tuple[int, Any]:
        self.token_for(user)
        return self.admin("POST", self.server_path(user, server), options if options is not None else {})

    def server_state(self, user: str, server: str = "") -> Optional[dict]:
        status, model = self.admin("GET", f"/hub/api/users/{user}")
        assert status == 200, (status, model)
        return (model.get("servers") or {}).get(server)

    def wait_ready(self, user: str, server: str = "") -> dict:
        return wait_for(f"{user}'s server {server!r} to be ready", lambda: (s := self.server_state(user, server)) and s.get("ready") and s)

    def wait_stopped(self, user: str, server: str = "") -> None:
        wait_for(f"{user}'s server {server!r} to stop", lambda: self.server_state(user, server) is None)

    def stop_server(self, user: str, server: str = "") -> None:
        status, body = self.admin("DELETE", self.server_path(user, server))
        assert status in (202, 204), (status, body)
        self.wait_stopped(user, server)

    def login(self, user: str) -> "Browser":
        """A browser session of `user`: the login form, then the hub's cookies and XSRF token."""
        b = Browser(self.url)
        b.get("/hub/login")
        status, _ = b.post("/hub/login?next=%2Fhub%2Fhome", {"username": user, "password": "any"})
        assert status < 400, status
        return b

    def quota_db(self) -> Path:
        return self.state / "quota.sqlite"

    def rows(self, sql: str, *params) -> list:
        """Rows of the quota database the hub wrote, read with sqlite3 as an operator would."""
        import sqlite3

        conn = sqlite3.connect(self.quota_db())
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    def server_environ(self, user: str) -> dict:
        """The environment of `user`'s single-user server process of this hub, read from /proc (Linux):
        another hub on the machine (the same suite on the other JupyterHub, run beside) may have a
        `user` of that name too."""

        def environ(pid: str) -> dict:
            try:
                raw = Path(f"/proc/{pid}/environ").read_bytes()
            except OSError:
                return {}
            return dict(kv.split("=", 1) for kv in raw.decode("utf-8", "replace").split("\0") if "=" in kv)

        pids = [p.name for p in Path("/proc").iterdir() if p.name.isdigit()]
        found = {pid: e for pid, e in ((pid, environ(pid)) for pid in pids)
                 if e.get("JUPYTERHUB_USER") == user and "JUPYTERHUB_API_TOKEN" in e
                 and f":{self.env['QT_HUB_PORT']}/" in e.get("JUPYTERHUB_API_URL", "")}

        def parent(pid: str) -> str:
            try:
                return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
            except (OSError, IndexError):
                return ""

        # The server's own children (JupyterLab's helpers) inherit its environment: the server is the
        # one whose parent is not among them.
        found = [e for pid, e in found.items() if parent(pid) not in found]
        assert len(found) == 1, f"{len(found)} server processes of {user}"
        return found[0]


class Browser:
    """Cookies and the `_xsrf` token, as a browser page has them."""

    def __init__(self, base: str):
        import http.cookiejar

        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def xsrf(self) -> str:
        return next((c.value for c in self.jar if c.name == "_xsrf"), "")

    def _send(self, req: urllib.request.Request) -> tuple[int, Any]:
        req.add_header("X-XSRFToken", self.xsrf())
        try:
            with self.opener.open(req, timeout=DEADLINE_S) as r:
                raw, status = r.read(), r.status
        except urllib.error.HTTPError as e:
            raw, status = e.read(), e.code
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode("utf-8", "replace")

    def get(self, path: str) -> tuple[int, Any]:
        return self._send(urllib.request.Request(self.base + path))

    def post(self, path: str, form: dict) -> tuple[int, Any]:
        data = urllib.parse.urlencode({**form, "_xsrf": self.xsrf()}).encode()
        return self._send(urllib.request.Request(self.base + path, data=data, method="POST"))


@contextlib.contextmanager
def throwaway_hub(quota: dict):
    """A hub in a temporary folder with `custom.quota` = `quota` (authMode github), stopped and
    removed afterwards: what the benches in python/bench run against."""
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        values = state / "values.json"
        values.write_text(json.dumps({"custom": {"authMode": "github", "quota": quota}}))
        hub = Hub(state / "hub", values).start()
        try:
            yield hub
        finally:
            hub.stop()
