"""The hub's side of docs/upgrade.md: the start-up step backs a SQLite quota database up before it
migrates it (kept `backup_keep` times, progress in the log), a release's schema is written by the
previous release as it is (the floor), a schema above the floor is refused naming the restore
command, and `jupyterhub-quota restore` checks the backup and refuses while the database is open."""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from jupyterhub_quota.host.engine import Caller, QuotaEngine, StorageError
from jupyterhub_quota.hub import backups, upgrade

VALUES = {"custom": {"authMode": "github", "quota": {"defaultQuota": 0}}}
ADMIN = Caller("admin", admin=True)
TOOL = str(Path(sys.executable).parent / "jupyterhub-quota")
NOW = 1_795_300_000


def opener(path: Path):
    return lambda migrate=True: QuotaEngine(str(path), VALUES, migrate=migrate)


def set_balance(path: Path, user: str, amount: int) -> None:
    e = QuotaEngine(str(path), VALUES)
    try:
        r = e.handle_request("POST", f"/admin/api/quota/users/{user}", "", f'{{"action":"set","amount":{amount}}}', ADMIN, NOW)
        assert r.status == 200, r.body
    finally:
        e.close()


def as_schema_9(path: Path) -> None:
    """Schema 9, as the engines before schema 10 left it: no record of versions, the version in user_version."""
    with sqlite3.connect(path) as c:
        c.executescript("DROP TABLE quota_schema; PRAGMA user_version = 9")
    c.close()


def schema(path: Path) -> tuple[int, int]:
    with sqlite3.connect(path) as c:
        found = backups.schema_of(c)
    c.close()
    return found


def test_the_start_up_step_backs_up_then_migrates_and_keeps_every_pre_migration_backup(tmp_path, caplog):
    db = tmp_path / "quota.sqlite"
    set_balance(db, "alice", 42)
    folder = tmp_path / "backups"
    pre = upgrade.pre_migration_dir(folder)
    for round_ in range(3):
        as_schema_9(db)
        with caplog.at_level(logging.INFO, logger="jupyterhub_quota"):
            assert upgrade.start_up(str(db), VALUES, opener(db), backup_dir=str(folder), backup_keep=2) == (9, 12)
        assert schema(db) == (12, 9), "version 12, floor 9 where schema 9 engines read their version"
        # Each round's backup gets a day of its own (their names are their times, one a second).
        newest = sorted(pre.glob("quota-*Z.db"))[-1]
        newest.rename(pre / f"quota-2026010{round_}T000000Z.db")
    kept = sorted(pre.iterdir())
    assert [p.name for p in kept] == [f"quota-2026010{i}T000000Z.db" for i in range(3)], \
        "every pre-migration backup kept: the nightly rotation (backup_keep) never prunes them"
    for p in kept:
        assert schema(p) == (9, 9), "each backup is the database as it was before its migration"
        assert p.stat().st_mode & 0o777 == 0o600
        with sqlite3.connect(p) as c:
            assert c.execute("SELECT balance FROM users WHERE username = 'alice'").fetchone() == (42,)
        c.close()
    said = caplog.text
    for words in ("has schema 9, this package writes 12: backing it up to", "integrity ok, every balance equals its ledger",
                  "migrating the quota database from schema 9 to 12", "is at schema 12 (from 9)"):
        assert words in said, said
    # Current: nothing backed up, nothing migrated.
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="jupyterhub_quota"):
        assert upgrade.start_up(str(db), VALUES, opener(db), backup_dir=str(folder)) == (12, 12)
    assert "backing it up" not in caplog.text and len(list(pre.iterdir())) == 3


def run(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([TOOL, *args], env=env, capture_output=True, text=True, timeout=120)


def test_restore_checks_the_backup_refuses_while_open_and_keeps_what_it_replaced(tmp_path):
    import os

    db = tmp_path / "quota.sqlite"
    values = tmp_path / "values.yaml"
    values.write_text("custom:\n  authMode: github\n")
    env = {**os.environ, "QUOTA_DB_URL": f"sqlite://{db}", "QUOTA_VALUES": str(values)}
    set_balance(db, "alice", 100)
    r = run("backup", "-o", f"{tmp_path}/b/", env=env)
    assert r.returncode == 0, r.stderr
    [good] = (tmp_path / "b").glob("quota-*Z.db")  # beside it: the backups' state (what /metrics reads)
    set_balance(db, "alice", 1)
    # An earlier schema's backup is restored by the release that made it.
    older = tmp_path / "older.db"
    older.write_bytes(good.read_bytes())
    as_schema_9(older)
    r = run("restore", str(older), env=env)
    assert r.returncode == 1 and "schema version 9, this package writes 12" in r.stderr and "was not changed" in r.stderr, r.stderr
    # While the hub has it open (a connection in WAL mode): refused.
    hub = sqlite3.connect(db)
    hub.execute("SELECT 1 FROM users").fetchall()
    hub.execute("BEGIN")
    hub.execute("SELECT 1 FROM users").fetchall()
    r = run("restore", str(good), env=env)
    assert r.returncode == 1 and "has it open: stop the hub first" in r.stderr, r.stderr
    hub.rollback()
    hub.close()
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT balance FROM users").fetchone() == (1,)
    c.close()
    r = run("restore", str(good), env=env)
    assert r.returncode == 0 and "is kept as" in r.stdout, r.stdout + r.stderr
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT balance FROM users").fetchone() == (100,)
    c.close()
    [kept] = tmp_path.glob("quota.sqlite.before-restore-*")
    assert kept.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("expr, after, due", [
    ("30 2 * * *", "2026-11-29T02:29:59", "2026-11-29T02:30:00"),
    ("30 2 * * *", "2026-11-29T02:30:00", "2026-11-30T02:30:00"),  # strictly after
    ("0 */6 * * *", "2026-11-29T13:00:00", "2026-11-29T18:00:00"),
    ("15 3 * * 1", "2026-11-29T00:00:00", "2026-11-30T03:15:00"),  # 2026-11-30 is a Monday
    ("0 0 1 * 0", "2026-11-02T00:00:00", "2026-11-08T00:00:00"),  # the 1st or a Sunday (cron's rule)
    ("0 0 29 2 *", "2026-03-01T00:00:00", "2028-02-29T00:00:00"),
])
def test_the_backup_schedule_is_cron_in_utc(expr, after, due):
    import datetime as dt

    from jupyterhub_quota.hub.backup_schedule import next_time

    ts = lambda s: int(dt.datetime.fromisoformat(s).replace(tzinfo=dt.timezone.utc).timestamp())  # noqa: E731
    assert next_time(expr, ts(after)) == ts(due)


@pytest.mark.parametrize("expr, says", [
    ("30 2 * *", "five fields"), ("61 2 * * *", "minute `61` is outside 0-59"), ("x 2 * * *", "minute `x` is not"),
    ("0 0 * * */0", "`/0` is not a step"),
])
def test_a_bad_backup_schedule_is_refused_naming_the_field(expr, says):
    from jupyterhub_quota.hub.backup_schedule import ScheduleError, parse

    with pytest.raises(ScheduleError, match=says.replace("(", r"\(")):
        parse(expr)


def test_a_scheduled_backup_that_fails_is_logged_and_the_next_one_works(tmp_path, caplog):
    from jupyterhub_quota.hub.backup_schedule import run_once

    db = tmp_path / "quota.sqlite"
    with caplog.at_level(logging.INFO, logger="jupyterhub_quota"):
        assert run_once(str(db), VALUES, tmp_path / "b", 2) is None
    assert "the scheduled backup of" in caplog.text and "no such file" in caplog.text
    set_balance(db, "alice", 3)
    out = run_once(str(db), VALUES, tmp_path / "b", 2)
    assert out is not None and out.parent == tmp_path / "b" and schema(out) == (12, 9)
