"""The receivers docs/notifications.md gives (examples/webhook_receiver.py and
examples/webhook-receiver.mjs), each run as a reader would run it, behind a real `quota-hub serve`
delivering to it: the events quota-hub signs pass their check and are printed once; a request
with a wrong signature is refused; repeats are dropped by the signed body's `id`."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

from conftest import REPO
from support.hub_process import free_port, wait_for

SECRET = "receiver-test-secret"


class Lines:
    """A process's stdout, line by line, as it comes."""

    def __init__(self, proc: subprocess.Popen):
        self.lines: list[str] = []
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()

    def _read(self, proc) -> None:
        for line in proc.stdout:
            self.lines.append(line.rstrip("\n"))


def start_receiver(kind: str, port: int) -> subprocess.Popen:
    env = dict(os.environ, QUOTA_WEBHOOK_SECRET=SECRET)
    if kind == "python":
        cmd = [sys.executable, str(REPO / "examples" / "webhook_receiver.py"), str(port)]
    else:
        cmd = [shutil.which("node") or "node", str(REPO / "examples" / "webhook-receiver.mjs"), str(port)]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def post(url: str, body: bytes, headers: dict) -> int:
    """The status of a POST (0: no connection)."""
    req = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except urllib.error.URLError:
        return 0


@pytest.mark.parametrize("kind", ["python", "node"])
def test_the_documented_receiver_checks_quota_hubs_signatures(kind, tmp_path, quota_hub_bin):
    port = free_port()
    receiver = start_receiver(kind, port)
    out = Lines(receiver)
    url = f"http://127.0.0.1:{port}/quota-events"
    try:
        wait_for("the receiver", lambda: post(url, b"{}", {"Quota-Signature": "t=0,v1=00"}) == 401)
        values = tmp_path / "values.json"
        values.write_text(json.dumps({"custom": {"authMode": "github", "quota": {"webhooks": [
            {"name": "ops", "url": url, "secretEnv": "OPS_SECRET", "events": ["start.refused"]}]}}}))
        db = f"sqlite://{tmp_path / 'q.db'}"
        hub_token = subprocess.run([quota_hub_bin, "token", "issue", "--db", db, "--user", "hub", "--scope", "quota:sessions"],
                                   capture_output=True, text=True, check=True).stdout.strip()
        server = subprocess.Popen([quota_hub_bin, "serve", "--db", db, "--values", str(values), "--listen", "127.0.0.1:0"],
                                  env=dict(os.environ, OPS_SECRET=SECRET), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            line = server.stdout.readline()
            assert "listening on" in line, line
            base = line.split()[-1].rstrip("/")
            for user in ("ann", "bob"):
                status = post(f"{base}/api/quota/sessions", json.dumps({"username": user, "runtime_minutes": 5}).encode(),
                              {"Authorization": f"token {hub_token}", "Content-Type": "application/json"})
                assert status == 403
            wait_for("both events", lambda: len([x for x in out.lines if x.startswith("event ")]) == 2)
            assert out.lines[-2].startswith("event 1 start.refused ann: ")
            assert out.lines[-1].startswith("event 2 start.refused bob: ")
        finally:
            server.terminate()
            server.wait(timeout=30)
        # A body whose signature is not the secret's is refused, and not printed.
        t = int(time.time())
        assert post(url, b'{"id": 9}', {"Quota-Signature": f"t={t},v1={'0' * 64}", "Quota-Event-Id": "9"}) == 401
        assert not any(x.startswith("event 9") for x in out.lines)
        # De-duplication reads the signed body's id, never the unsigned header: a new event sent
        # with an old event's `Quota-Event-Id` is printed; the same body again is not.
        body = json.dumps({"id": 3, "kind": "start.refused", "username": "cy", "data": {}}).encode()
        mac = hmac.new(SECRET.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
        signed = {"Quota-Signature": f"t={t},v1={mac}", "Quota-Event-Id": "1"}
        assert post(url, body, signed) == 200 and post(url, body, dict(signed, **{"Quota-Event-Id": "3"})) == 200
        wait_for("event 3", lambda: any(x.startswith("event 3 start.refused cy") for x in out.lines))
        assert post(url, b'{"id": 4, "kind": "x", "username": "dee", "data": {}}', {}) == 401
        assert len([x for x in out.lines if x.startswith("event 3 ")]) == 1, out.lines
    finally:
        receiver.terminate()
        receiver.wait(timeout=30)
