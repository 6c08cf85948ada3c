"""The quota database down under a running hub: a spawn's gate that cannot reach its database never
counts toward the hub's `consecutive_failure_limit` (else a database outage stops the hub for
everyone after a few spawns), on JupyterHub 5 and 6. With `custom.quota.onStorageError: refuse`
(the default) the spawn gets a clear 503; with `allow` it starts unbilled (a WARNING line and a
metric) and its stop changes nothing. Outages: an SQLite file locked by another process, and the
PostgreSQL server stopped and started again (the hub's connections come back by themselves).

The limit is 1, so one counted failure would make the hub log "Aborting due to 1 consecutive spawn
failures" before it answers the spawn. The README's test command runs this file in a JupyterHub 6
and a JupyterHub 5 virtualenv."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import urllib.request

import jupyterhub
import pytest
import yaml

from support.hub_process import DEADLINE_S, HERE, Hub

VALUES = HERE / "hub_values.yaml"
JH6 = jupyterhub.version_info[0] >= 6


def start_hub(tmp_path, policy: str, db_url: str = "") -> Hub:
    values = yaml.safe_load(VALUES.read_text())
    values["custom"]["quota"]["onStorageError"] = policy
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    env = {"QT_FAILURE_LIMIT": "1", **({"QT_DB_URL": db_url} if db_url else {})}
    # A locked database fails the gate after 1 s, well within the hub's slow_spawn_timeout.
    hub = Hub(tmp_path / "hub", path, quota_kwargs={"busy_wait_ms": 1000}, extra_env=env).start()
    status, body = hub.admin("POST", "/hub/admin/api/quota/users/rich", {"action": "set", "amount": 1000})
    assert status == 200, (status, body)
    return hub


def metrics(hub: Hub) -> str:
    req = urllib.request.Request(f"{hub.url}/hub/metrics", headers={"Authorization": f"token {hub.admin_token}"})
    with urllib.request.urlopen(req, timeout=DEADLINE_S) as r:
        return r.read().decode()


def balance(hub: Hub) -> int:
    status, body = hub.admin("GET", "/hub/admin/api/quota/users/rich")
    assert status == 200, (status, body)
    return body["balance"]


class SqliteLock:
    """Another process holding the quota file's write lock until released."""

    def __init__(self, path):
        code = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
                "c.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); sys.stdin.read()")
        self.proc = subprocess.Popen([sys.executable, "-c", code, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "locked"

    def release(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=DEADLINE_S)


def assert_not_counted(hub: Hub):
    log = hub.log()
    assert "Aborting due to" not in log and "consecutive spawns failed" not in log, log[-3000:]
    assert hub.exited() is None
    assert hub.api("GET", "/hub/api/")[0] == 200


def assert_refused_clearly(hub: Hub, status, body):
    assert status == 503, (status, body)
    assert body["message"].startswith("Quota check failed, the server was not started: the quota database failed"), body
    assert "Try again in a few minutes" in body["message"]
    assert_not_counted(hub)
    assert 'quota_gate_storage_errors_total{outcome="refused"} 1.0' in metrics(hub)
    if JH6:
        # The hub's own spawn metrics tell this refusal from an error.
        assert 'jupyterhub_server_spawn_duration_seconds_count{reason="quota-storage-error",status="failure"} 1.0' in metrics(hub)


def spawn_and_stop(hub: Hub) -> None:
    status, body = hub.spawn("rich", {"runtime_minutes": 5})
    assert status in (201, 202), (status, body)
    hub.wait_ready("rich")
    hub.stop_server("rich")


def test_sqlite_locked_refuse_is_a_clear_503_that_does_not_count(tmp_path):
    hub = start_hub(tmp_path, "refuse")
    try:
        lock = SqliteLock(hub.quota_db())
        try:
            status, body = hub.spawn("rich", {"runtime_minutes": 5})
        finally:
            lock.release()
        assert_refused_clearly(hub, status, body)
        assert hub.server_state("rich") is None, "nothing started"
        spawn_and_stop(hub)  # the lock is gone: the next spawn is gated and billed again
        assert balance(hub) < 1000
        assert_not_counted(hub)
    finally:
        hub.stop()


def test_sqlite_locked_allow_starts_unbilled_and_its_stop_changes_nothing(tmp_path):
    hub = start_hub(tmp_path, "allow")
    try:
        lock = SqliteLock(hub.quota_db())
        try:
            status, body = hub.spawn("rich", {"runtime_minutes": 5})
            assert status in (201, 202), (status, body)
            hub.wait_ready("rich")
            hub.stop_server("rich")
        finally:
            lock.release()
        assert_not_counted(hub)
        assert "starts UNBILLED (onStorageError: allow)" in hub.log()
        assert 'quota_gate_storage_errors_total{outcome="allowed"} 1.0' in metrics(hub)
        assert hub.rows("SELECT COUNT(*) FROM sessions") == [(0,)]
        assert balance(hub) == 1000
        assert hub.rows("SELECT COUNT(*) FROM transactions WHERE username = 'rich'") == [(1,)], "only the admin's set"
    finally:
        hub.stop()


def test_postgres_stopped_under_the_hub_refuses_without_counting_and_comes_back(tmp_path):
    import psycopg

    url = os.environ.get("QUOTA_TEST_PG_URL")
    assert url, "QUOTA_TEST_PG_URL is not set: run through scripts/with-postgres.sh (scripts/test-python.sh does)"
    name = f"outage_{secrets.token_hex(4)}"
    with psycopg.connect(url, autocommit=True) as c:
        c.execute(f"CREATE DATABASE {name}")
    hub = start_hub(tmp_path, "refuse", db_url=url.rsplit("/", 1)[0] + "/" + name)
    try:
        subprocess.run(os.environ["QUOTA_TEST_PG_STOP"], shell=True, check=True, timeout=DEADLINE_S)
        try:
            status, body = hub.spawn("rich", {"runtime_minutes": 5})
        finally:
            subprocess.run(os.environ["QUOTA_TEST_PG_START"], shell=True, check=True, timeout=DEADLINE_S)
        assert_refused_clearly(hub, status, body)
        spawn_and_stop(hub)  # the server is back: the hub's connection is opened again
        assert balance(hub) < 1000
        assert_not_counted(hub)
    finally:
        hub.stop()
