"""Driver of scripts/rollback-test.sh: old -> new -> old quota-hub on one database with a writer
running throughout. ROLLBACK_OLD_BIN / ROLLBACK_NEW_BIN are the two binaries; argv[1] is
`sqlite` or `postgres` (QUOTA_TEST_PG_URL from scripts/with-postgres.sh).

The writer adds credits and runs sessions for 40 users through whichever servers are up, each
request with an Idempotency-Key and retried with it until answered, so each write lands exactly
once; at the end every balance must equal its ledger and every acknowledged add be there. Some
sessions charge a budget the users share, one of them left running across each switch, so the
budget's running holds (schema 11, kept by triggers) are written by both releases: at the end they
must equal the sums of the sessions running.
SQLite: old serves; stopped; new migrates (backing up first) and serves; stopped; old serves the
new schema (the rollback). PostgreSQL: old serves; new migrates while old serves, then both serve
(a rolling upgrade: the writer alternates); old stops; old starts again beside new; new stops."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

OLD, NEW = os.environ["ROLLBACK_OLD_BIN"], os.environ["ROLLBACK_NEW_BIN"]
USERS = [f"u{i:02d}" for i in range(40)]
#: Acknowledged operations per phase.
PHASE_OPS = 300


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    def __init__(self, binary: str, db: str, values: Path, name: str):
        self.name, self.port = name, free_port()
        self.url = f"http://127.0.0.1:{self.port}/hub"
        self.proc = subprocess.Popen(
            [binary, "serve", "--db", db, "--values", str(values), "--listen", f"127.0.0.1:{self.port}"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in self.proc.stdout:
            if "listening on http://" in line:
                break
        else:
            raise SystemExit(f"{name} did not start (exit {self.proc.wait()})")
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()
        say(f"{name} serves on {self.port}")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=60)
        say(f"{self.name} stopped")


class Writer(threading.Thread):
    def __init__(self, token: str):
        super().__init__(daemon=True)
        self.token, self.servers, self.lock = token, [], threading.Lock()
        self.acked: dict[str, int] = {u: 0 for u in USERS}
        self.ops, self.by_server, self.retries, self.stopping = 0, {}, 0, False

    def use(self, *servers: Server) -> None:
        with self.lock:
            self.servers = list(servers)

    def call(self, method: str, path: str, body: dict) -> dict:
        key, attempt = str(uuid.uuid4()), 0
        while True:
            with self.lock:
                servers = list(self.servers)
            s = servers[(self.ops + attempt) % len(servers)] if servers else None
            attempt += 1
            if s is None:
                time.sleep(0.05)
                continue
            req = urllib.request.Request(s.url + path, data=json.dumps(body).encode(), method=method, headers={
                "Authorization": f"token {self.token}", "Content-Type": "application/json", "Idempotency-Key": key})
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    self.by_server[s.name] = self.by_server.get(s.name, 0) + 1
                    return json.loads(r.read() or b"{}")
            except urllib.error.HTTPError as e:
                if e.code == 403:  # a refused start is an answer (and writes nothing)
                    return json.loads(e.read() or b"{}")
                if e.code < 500:
                    raise SystemExit(f"{s.name}: {method} {path}: {e.code} {e.read()[:300]!r}")
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            self.retries += 1
            time.sleep(0.05)

    def run(self) -> None:
        running: int | None = None
        while not self.stopping:
            u = USERS[self.ops % len(USERS)]
            if self.ops % 10 == 4:
                # A session on the budget, left running; the one before it ends now.
                s = self.call("POST", "/api/quota/sessions",
                              {"username": u, "server_name": f"b{self.ops}", "runtime_minutes": 30, "budget": "lab"})
                if running is not None:
                    self.call("POST", f"/api/quota/sessions/{running}/end", {})
                running = s.get("session_id")
            elif self.ops % 10 == 9 and self.ops >= len(USERS):
                s = self.call("POST", "/api/quota/sessions", {"username": u, "runtime_minutes": 1})
                if "session_id" in s:
                    self.call("POST", f"/api/quota/sessions/{s['session_id']}/end", {})
            else:
                self.call("POST", f"/admin/api/quota/users/{u}", {"action": "add", "amount": 3})
                self.acked[u] += 3
            self.ops += 1

    def wait_ops(self, n: int) -> None:
        goal = self.ops + n
        while self.ops < goal:
            if not self.is_alive():
                raise SystemExit("the writer stopped")
            time.sleep(0.05)


def token(binary: str, db: str) -> str:
    out = subprocess.run([binary, "token", "issue", "--db", db, "--user", "root", "--admin"],
                         check=True, capture_output=True, text=True)
    return out.stdout.strip()


def migrate(db: str, values: Path, backups: Path | None) -> None:
    args = [NEW, "migrate", "--db", db, "--values", str(values)]
    if backups is not None:
        args += ["--backup-dir", str(backups)]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"migrate failed: {r.stderr}")
    say("migrate: " + (r.stderr + r.stdout).strip().replace("\n", " | "))


def rows(db: str, sql: str) -> list[tuple]:
    if db.startswith("sqlite://"):
        import sqlite3

        with sqlite3.connect(db.removeprefix("sqlite://")) as c:
            return c.execute(sql).fetchall()
    import psycopg

    with psycopg.connect(db) as c:
        return [tuple(r) for r in c.execute(sql).fetchall()]


def verify(db: str, w: Writer) -> None:
    wrong = rows(db, "SELECT u.username FROM users u LEFT JOIN transactions t ON t.username = u.username AND t.budget IS NULL "
                     "GROUP BY u.username, u.balance HAVING u.balance <> COALESCE(SUM(t.amount), 0)")
    assert wrong == [], f"balances that differ from their ledger: {wrong}"
    adds = dict(rows(db, "SELECT username, SUM(amount) FROM transactions WHERE amount > 0 GROUP BY username"))
    missing = {u: (n, adds.get(u, 0)) for u, n in w.acked.items() if adds.get(u, 0) != n}
    assert not missing, f"acknowledged adds vs ledger: {missing}"
    kept = rows(db, "SELECT budget, held FROM budget_holds WHERE held <> 0 ORDER BY budget")
    summed = rows(db, "SELECT budget, CAST(SUM(estimated_cost_milli) AS BIGINT) FROM sessions WHERE budget IS NOT NULL "
                      "AND status = 'active' AND billable = 1 GROUP BY budget HAVING SUM(estimated_cost_milli) <> 0 "
                      "ORDER BY budget")
    assert kept and kept == summed, f"the budget's running holds {kept} against its sessions {summed}"
    (version, floor), = rows(db, "SELECT MAX(version), MAX(floor) FROM quota_schema")
    active = rows(db, "SELECT COUNT(*) FROM sessions WHERE status = 'active'")[0][0]
    say(f"verified: {len(w.acked)} users reconcile, {sum(w.acked.values())} acknowledged credits all in the ledger, "
        f"{active} session(s) left running, the budget's holds equal to them ({kept}), schema {version} (floor {floor}); requests per server {w.by_server}, "
        f"{w.retries} retried while a server was down")


def main() -> None:
    # A writer that stops says why.
    threading.excepthook = lambda a: print(f"the writer: {a.exc_value}", flush=True)
    kind = sys.argv[1]
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="quota-rollback-"))
    values = tmp / "values.yaml"
    values.write_text("custom:\n  authMode: github\n  quota:\n    defaultQuota: 0\n    minimumToStart: 0\n"
                      f"    budgets:\n      lab:\n        users: [{', '.join(USERS)}]\n")
    if kind == "sqlite":
        db = f"sqlite://{tmp / 'quota.db'}"
    else:
        db = os.environ["QUOTA_TEST_PG_URL"]
    w = Writer(token(OLD, db))
    old = Server(OLD, db, values, "old")
    w.use(old)
    w.call("POST", "/admin/api/quota/budgets/lab", {"action": "set", "amount": 1_000_000})
    w.start()
    w.wait_ops(PHASE_OPS)
    if kind == "sqlite":
        old.stop()
        migrate(db, values, tmp / "pre-migration")
        new = Server(NEW, db, values, "new")
        w.use(new)
        w.wait_ops(PHASE_OPS)
        new.stop()
        old = Server(OLD, db, values, "old again")
        w.use(old)
        w.wait_ops(PHASE_OPS)
    else:
        migrate(db, values, None)  # while old serves
        w.wait_ops(PHASE_OPS // 3)
        new = Server(NEW, db, values, "new")
        w.use(old, new)
        w.wait_ops(PHASE_OPS)
        old.stop()
        w.use(new)
        w.wait_ops(PHASE_OPS // 3)
        old = Server(OLD, db, values, "old again")
        w.use(old, new)
        w.wait_ops(PHASE_OPS // 3)
        new.stop()
        w.use(old)
        w.wait_ops(PHASE_OPS)
    w.stopping = True
    w.join(timeout=60)
    old.stop()
    assert w.by_server.get("old again", 0) > 0, "the old release served the new schema"
    verify(db, w)
    say(f"{kind}: old -> new -> old passed in {time.monotonic() - started:.0f} s ({w.ops} operations)")


if __name__ == "__main__":
    main()
