"""How long a lost volume takes to come back (RTO, docs/operations.md): a quota database of about
`--gb` GB (users whose balances equal their ledgers; the ledger is what grows), made by
quota-hub's migration and then grown in bulk, replicated by the real Litestream to a file replica
(python/tests/test_replication.py measures what is lost, over SFTP too; this, the time); then the
volume deleted and the database restored from the replica, timed, checked (integrity, every
balance against its ledger) and served by quota-hub. Prints the figures.

    bash scripts/replication-rto.sh [--gb 1]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
QUOTA_HUB = str(REPO / "target" / "debug" / "quota-hub")
LITESTREAM = str(REPO / "target" / "pyenv" / "bin" / "litestream")
MISMATCHES = ("SELECT u.username FROM users u LEFT JOIN transactions t ON t.username = u.username AND t.budget IS NULL "
              "GROUP BY u.username, u.balance HAVING u.balance <> COALESCE(SUM(t.amount), 0)")


def say(m: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {m}", flush=True)


def grow(db: Path, gb: float) -> None:
    """Ledger rows in bulk (each user's balance then set to its ledger's sum), to `gb` GB."""
    with sqlite3.connect(db) as c:
        c.execute("PRAGMA journal_mode = WAL")
        users = 10_000
        c.executemany("INSERT OR IGNORE INTO users (username, balance, unlimited, updated_at) VALUES (?, 0, 0, 0)",
                      [(f"u{i:05d}",) for i in range(users)])
        batch = 200_000
        while db.stat().st_size < gb * 2**30:
            c.execute(
                "INSERT INTO transactions (username, amount, transaction_type, resource_type, description, balance_before,"
                " balance_after, created_at, created_by, budget, expires_at)"
                " WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?)"
                " SELECT printf('u%05d', abs(random()) % ?), 5, 'add', NULL, 'RTO measurement, a top-up of the week',"
                " 0, 5, 1796000000 + i, 'rto', NULL, NULL FROM n", (batch - 1, users))
            c.commit()
            say(f"{db.stat().st_size / 2**30:.2f} GB")
        c.execute("UPDATE users SET balance = (SELECT COALESCE(SUM(amount), 0) FROM transactions t"
                  " WHERE t.username = users.username AND t.budget IS NULL)")
        c.commit()
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gb", type=float, default=1.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=REPO / "target") as tmp:
        t = Path(tmp)
        volume = t / "volume"
        volume.mkdir()
        db = volume / "quota.db"
        values = t / "values.yaml"
        values.write_text("custom:\n  authMode: github\n")
        subprocess.run([QUOTA_HUB, "migrate", "--db", f"sqlite://{db}", "--values", str(values), "--no-backup"],
                       check=True, capture_output=True)
        grow(db, args.gb)
        size = db.stat().st_size
        cfg = t / "litestream.yml"
        cfg.write_text(yaml.safe_dump({"socket": {"enabled": True, "path": str(t / "ls.sock")},
                                       "dbs": [{"path": str(db), "replica": {"url": f"file://{t / 'replica'}"}}]}))
        started = time.monotonic()
        ls = subprocess.Popen([LITESTREAM, "replicate", "-config", str(cfg)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        while not (t / "ls.sock").exists():
            time.sleep(0.2)
        subprocess.run(["curl", "-sf", "--unix-socket", str(t / "ls.sock"), "-X", "POST", "http://l/sync", "-d",
                        f'{{"path": "{db}", "wait": true, "timeout": 3600}}'], check=True, capture_output=True)
        say(f"replicated {size / 2**30:.2f} GB in {time.monotonic() - started:.1f} s (the first snapshot)")
        ls.send_signal(signal.SIGKILL)
        ls.wait()
        shutil.rmtree(volume)
        volume.mkdir()
        started = time.monotonic()
        subprocess.run([LITESTREAM, "restore", "-config", str(cfg), "-if-db-not-exists", "-if-replica-exists", str(db)],
                       check=True, capture_output=True)
        took = time.monotonic() - started
        with sqlite3.connect(db) as c:
            ok = c.execute("PRAGMA quick_check").fetchone()[0]
            wrong = c.execute(MISMATCHES).fetchall()
            rows = c.execute("SELECT COUNT(*) FROM transactions").fetchone()[0]
        c.close()
        serves = subprocess.run([QUOTA_HUB, "list-quota", "--db", f"sqlite://{db}", "--values", str(values)],
                                capture_output=True, text=True).returncode == 0
        say(f"restored {db.stat().st_size / 2**30:.2f} GB ({rows:,} ledger rows) in {took:.1f} s "
            f"({size / 2**20 / took:.0f} MiB/s); quick_check {ok}; {len(wrong)} balance(s) apart from the ledger; "
            f"quota-hub serves it: {serves}")
        if ok != "ok" or wrong or not serves:
            sys.exit(1)


if __name__ == "__main__":
    os.umask(0o077)
    main()
