"""How the quota database grows: a month of a hub's use on a real SQLite file, then the rows of
each table and the file's size, per user and month (docs/operations.md, "Sizing").

    target/pyenv/bin/python scripts/sizing.py [USERS] [SESSIONS_PER_DAY]

Each user starts and ends SESSIONS_PER_DAY servers a day (an hour each) for 30
days, gets a weekly top-up (a refresh rule's run) and one admin change; what the hub writes for
that: the ledger, the sessions, the usage sums, the events. Run with the test environment's
Python (scripts/python-env.sh installs the package)."""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from jupyterhub_quota.host.engine import Caller, QuotaEngine

DAY = 86400
START = 1_796_083_200  # 2026-12-01T00:00:00Z


def main() -> None:
    users = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    per_day = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    values = {"custom": {"authMode": "github", "quota": {"defaultQuota": 0, "minimumToStart": 1, "warnBeforeStopMinutes": [10]}}}
    admin, hub = Caller("admin", admin=True), Caller("hub", scopes=["quota:sessions"])
    tmp = Path(tempfile.mkdtemp(prefix="quota-sizing-"))
    db = tmp / "quota.sqlite"
    e = QuotaEngine(str(db), values)
    started = time.monotonic()
    names = [f"user{i:05d}" for i in range(users)]

    def call(method: str, path: str, body: dict, caller: Caller, now: int) -> dict:
        r = e.handle_request(method, path, "", json.dumps(body), caller, now)
        assert r.status in (200, 201), (path, r.status, r.body)
        return json.loads(r.body)

    for n in names:
        call("POST", f"/admin/api/quota/users/{n}", {"action": "set", "amount": 10_000}, admin, START)
    for day in range(30):
        if day % 7 == 0:
            call("POST", "/admin/api/quota/refresh", {"action": "add", "amount": 200, "rule_name": "weekly",
                                                      "run_id": f"weekly@{day}"}, admin, START + day * DAY + 6 * 3600)
        for k in range(per_day):
            at = START + day * DAY + (9 + 3 * k) * 3600
            for n in names:
                s = call("POST", "/api/quota/sessions", {"username": n, "runtime_minutes": 60}, hub, at)
                call("POST", f"/api/quota/sessions/{s['session_id']}/end", {}, hub, at + 3600)
    e.close()
    with sqlite3.connect(db) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        tables = [r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        counts = {t: c.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables}
    c.close()
    size = db.stat().st_size
    print(f"{users} users, {per_day} session(s) a day each, 30 days, in {time.monotonic() - started:.0f} s")
    for t, n in counts.items():
        if n:
            print(f"  {t:20} {n:>9} rows  {n / users:8.1f} per user and month")
    print(f"  file: {size / 2**20:.1f} MiB, {size / users / 1024:.1f} KiB per user and month")


if __name__ == "__main__":
    main()
