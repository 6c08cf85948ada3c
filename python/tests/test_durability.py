"""What the hub says of its backups and of Litestream's replica (durability.py, issue 59), in the
same files and series as quota-hub: a backup into a folder records its outcome there (a failure
counted, never only a log line), `jupyterhub-quota backups` lists the folders, the pre-migration
backups go to a folder of their own that no rotation prunes, and the replica's lag comes from
Litestream's control socket (here a stand-in answering over a real Unix socket)."""

from __future__ import annotations

import json
import socketserver
import sqlite3
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from jupyterhub_quota import QuotaEngine
from jupyterhub_quota.hub import backups, durability, upgrade
from jupyterhub_quota.hub.cli import main as cli

VALUES = {"custom": {"authMode": "github"}}


def make_db(path: Path) -> None:
    e = QuotaEngine(str(path), VALUES)
    e.handle_request("POST", "/admin/api/quota/users/ann", body='{"action":"set","amount":5}',
                     caller=__import__("jupyterhub_quota").Caller("root", admin=True))
    e.close()


def test_a_backup_into_a_folder_records_its_outcome_and_the_listing_says_it(tmp_path, capsys):
    db, folder = tmp_path / "q.db", tmp_path / "backups"
    make_db(db)
    made = backups.backup(db, folder, VALUES, folder=True, keep=3, say=lambda m: None)
    state = durability.read_state(folder)
    assert state["last_success"] > 0 and state["last_bytes"] == made.stat().st_size and state["failures"] == 0
    with pytest.raises(backups.BackupFailed):
        backups.backup(tmp_path / "gone.db", folder, VALUES, folder=True, say=lambda m: None)
    state = durability.read_state(folder)
    assert state["failures"] == 1 and "no such file" in state["last_error"]
    families = {f.name: f.samples[0].value for f in durability.families(folder, None)}
    assert families["quota_backup_failures"] == 1
    assert families["quota_backup_bytes"] == made.stat().st_size
    assert cli(["--db", f"sqlite://{db}", "backups", str(folder)]) == 0
    out = capsys.readouterr().out
    assert made.name in out and "schema 12" in out and "1 failure(s)" in out, out


def test_the_backup_before_a_migration_has_a_folder_no_rotation_prunes(tmp_path):
    db, folder = tmp_path / "q.db", tmp_path / "quota-backups"
    make_db(db)
    nightly = [backups.backup(db, folder, VALUES, folder=True, keep=1, say=lambda m: None)]
    with sqlite3.connect(db) as c:  # back to the schema before, as an older release left it
        c.executescript("DROP TRIGGER budget_holds_started; DROP TRIGGER budget_holds_released; "
                        "DROP TRIGGER budget_holds_taken; DROP TRIGGER budget_holds_deleted; "
                        "DROP TABLE budget_holds; DELETE FROM quota_schema WHERE version >= 11")
    c.close()
    upgrade.start_up(str(db), VALUES, lambda migrate: QuotaEngine(str(db), VALUES, migrate=migrate),
                     backup_dir=str(folder), backup_keep=1)
    pre = sorted(upgrade.pre_migration_dir(folder).glob("quota-*Z.db"))
    assert len(pre) == 1
    with sqlite3.connect(pre[0]) as c:
        assert backups.schema_of(c)[0] == 10, "the database as it was before its migration"
    c.close()
    # The nightly rotation (keep 1) leaves it alone.
    nightly.append(backups.backup(db, folder, VALUES, folder=True, keep=1, force=True, say=lambda m: None))
    assert sorted(upgrade.pre_migration_dir(folder).glob("quota-*Z.db")) == pre
    assert not (upgrade.pre_migration_dir(folder) / durability.STATE_FILE).exists(), "not a scheduled backup"


class _Litestream(BaseHTTPRequestHandler):
    """Litestream's control socket's `POST /sync`, answering what the test set."""

    answer: dict = {}

    def do_POST(self) -> None:  # noqa: N802
        asked = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert asked["wait"] is True and asked["path"].endswith("q.db")
        body = json.dumps(self.answer).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


class _UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def get_request(self):
        request, _ = super().get_request()
        return request, ("local", 0)


def test_the_replicas_lag_comes_from_litestreams_socket(tmp_path):
    sock = str(tmp_path / "litestream.sock")
    server = _UnixServer(sock, _Litestream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        p = durability.ReplicaProbe(sock, str(tmp_path / "q.db"))
        p.started -= 100
        assert p.lag_seconds() >= 100, "behind since the start until a probe succeeds"
        _Litestream.answer = {"status": "synced", "txid": 7, "replicated_txid": 7}
        p.probe()
        assert p.lag_seconds() < 5
        _Litestream.answer = {"status": "synced_local", "txid": 8, "replicated_txid": 7}
        with pytest.raises(RuntimeError, match="behind"):
            p.probe()
        assert p.in_sync_at is not None, "the last success stays"
        (lag,) = durability.families(None, p)
        assert lag.name == "quota_replication_lag_seconds" and lag.samples[0].value < 5
    finally:
        server.shutdown()
        server.server_close()
