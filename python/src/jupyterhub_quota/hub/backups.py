"""Backups of the hub's SQLite quota database: a consistent copy while the hub runs (``VACUUM INTO``
in one read transaction; writers go on), checked before it appears (SQLite's integrity, the schema,
every balance equal to its ledger), kept ``keep`` times in a folder; and a restore that checks the
backup first, refuses while a hub has the database open, and keeps the database it replaces.
Used by ``jupyterhub-quota backup`` / ``restore`` and by the hub's start-up step (upgrade.py).
PostgreSQL has its own tools (pg_dump, docs/postgres.md)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Callable, Optional

from ..host.engine import QuotaEngine
from . import durability

#: The accounts whose balance differs from the sum of their ledger (none in a sound database):
#: users by name, budgets as `budget <name>`.
MISMATCHES = ("SELECT u.username FROM users u "
              "LEFT JOIN transactions t ON t.username = u.username AND t.budget IS NULL "
              "GROUP BY u.username, u.balance HAVING u.balance <> COALESCE(SUM(t.amount), 0) "
              "UNION ALL SELECT 'budget ' || b.name FROM budgets b LEFT JOIN transactions t ON t.budget = b.name "
              "GROUP BY b.name, b.balance HAVING b.balance <> COALESCE(SUM(t.amount), 0) ORDER BY 1")
#: Budgets (and their column in the ledger) came with schema 6.
BUDGETS_SINCE = 6


class BackupFailed(Exception):
    """A backup or restore that did not happen; the message says why. Nothing was changed."""


def schema_of(c: sqlite3.Connection) -> tuple[int, int]:
    """(version, floor) as the engine reads them: the floor where engines before schema 10 read
    their version (``user_version``), the version the newest row of ``quota_schema`` if any."""
    floor = c.execute("PRAGMA user_version").fetchone()[0]
    has = c.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'quota_schema'").fetchone()[0]
    if not has:
        return floor, floor
    return max(floor, c.execute("SELECT COALESCE(MAX(version), 0) FROM quota_schema").fetchone()[0]), floor


def current_version(values: dict) -> int:
    """The schema version this package writes."""
    mem = QuotaEngine(":memory:", values)
    try:
        return mem.migration[1]
    finally:
        mem.close()


def check_copy(path: Path, values: dict, *, earlier: bool = True) -> tuple[int, int, int]:
    """A copy's checks: SQLite's integrity, its schema (one this package writes, or with
    ``earlier`` an older one: the copy taken before a migration), every balance equal to its
    ledger. Returns (users, ledger rows, schema version)."""
    try:
        with sqlite3.connect(path) as c:
            verdict = [r[0] for r in c.execute("PRAGMA integrity_check")]
            if verdict != ["ok"]:
                raise BackupFailed(f"{path}: fails SQLite's integrity check: {'; '.join(verdict)}")
            version, floor = schema_of(c)
            wrong = [r[0] for r in c.execute(MISMATCHES)] if version >= BUDGETS_SINCE else []
            users = c.execute("SELECT COUNT(*) FROM users").fetchone()[0]
            ledger = c.execute("SELECT COUNT(*) FROM transactions").fetchone()[0]
        c.close()
    except sqlite3.DatabaseError as e:
        raise BackupFailed(f"{path}: not a sound SQLite quota database: {e}") from None
    current = current_version(values)
    if version > current and floor > current:
        raise BackupFailed(f"{path}: schema version {version} of a newer release, which engines of schema {floor} "
                           f"or newer may write; this package writes {current} (use that release)")
    if version < current and not earlier:
        raise BackupFailed(f"{path}: schema version {version}, this package writes {current} (restore it with the "
                           "release that made it, then upgrade: docs/upgrade.md)")
    if wrong:
        raise BackupFailed(f"{path}: {len(wrong)} balance(s) differ from the sum of their ledger: {', '.join(wrong[:5])}")
    return users, ledger, version


def _private(p: Path) -> None:
    """An empty file only its owner may read and write: no one else may read a copy of every
    balance and ledger row, not even while it is written."""
    os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def _into_place(src: Path, dst: Path) -> None:
    """Makes `dst` the file `src` is now, durably: what appears under the name is whole."""
    with open(src, "rb") as f:
        os.fsync(f.fileno())
    os.replace(src, dst)


def prune(folder: Path, keep: int) -> list[Path]:
    """Removes all but the newest ``keep`` backups (``quota-<UTC time>Z.db``, sorting as their times)."""
    backups = sorted(p for p in folder.iterdir() if p.name.startswith("quota-") and p.name.endswith("Z.db"))
    old = backups[: max(0, len(backups) - keep)]
    for p in old:
        p.unlink()
    return old


def backup(src: Path, out: Path, values: dict, *, folder: bool = False, keep: Optional[int] = None,
           force: bool = False, say: Callable[[str], None] = print, state: bool = True) -> Path:
    """Copies ``src`` to ``out`` (a file; with ``folder``, ``out/quota-<UTC time>Z.db``, keeping
    the newest ``keep``). Returns the backup's path; progress and the summary go to ``say``. Into
    a folder, every outcome is recorded there for the metrics (``durability.record``), unless
    ``state`` is False (the pre-migration backups)."""
    if not folder or not state:
        return _backup(src, out, values, folder=folder, keep=keep, force=force, say=say)
    out.mkdir(parents=True, exist_ok=True)
    try:
        made = _backup(src, out, values, folder=True, keep=keep, force=force, say=say)
    except Exception as e:
        durability.record(out, False, error=str(e))
        raise
    durability.record(out, True, size=made.stat().st_size)
    return made


def _backup(src: Path, out: Path, values: dict, *, folder: bool, keep: Optional[int], force: bool,
            say: Callable[[str], None]) -> Path:
    if not src.is_file():
        raise BackupFailed(f"{src}: no such file")
    if folder:
        out.mkdir(parents=True, exist_ok=True)
        out = out / time.strftime("quota-%Y%m%dT%H%M%SZ.db", time.gmtime())
    if out.exists() and not force:
        raise BackupFailed(f"{out}: exists already (give --force to replace it)")
    partial = out.with_name(out.name + ".partial")
    partial.unlink(missing_ok=True)
    started = time.monotonic()
    say(f"backing up {src} ({src.stat().st_size / 2**20:.1f} MiB) to {out} ...")
    try:
        _private(partial)
        with sqlite3.connect(src, timeout=10) as c:
            c.execute("VACUUM INTO ?", (str(partial),))
        c.close()
        users, ledger, version = check_copy(partial, values)
        _into_place(partial, out)
    finally:
        partial.unlink(missing_ok=True)
    say(f"backup {out}: {users} users, {ledger} ledger rows, schema {version}, {out.stat().st_size / 2**20:.1f} MiB, "
        f"in {time.monotonic() - started:.2f} s; integrity ok, every balance equals its ledger")
    if folder and keep is not None:
        for old in prune(out.parent, keep):
            say(f"removed {old} (keep {keep})")
    return out


def _in_use(target: Path) -> bool:
    """Whether another process has the database open: leaving WAL mode needs every other
    connection gone (a hub, a CLI), and leaves one plain file to keep and replace."""
    with sqlite3.connect(target, timeout=1) as c:
        try:
            mode = c.execute("PRAGMA journal_mode = DELETE").fetchone()[0]
        except sqlite3.OperationalError:
            return True
    c.close()
    return mode != "delete"


def restore(target: Path, source: Path, values: dict, *, say: Callable[[str], None] = print) -> Optional[Path]:
    """Replaces the database ``target`` with the backup ``source``, checked first on a copy (the
    backup is never changed). Refuses while a hub uses ``target``. Returns where the database it
    replaced is kept (``<file>.before-restore-<seconds>``), or None when there was none. A folder
    as ``source``: its newest backup (``quota-<UTC time>Z.db``)."""
    if source.is_dir():
        found = sorted(p for p in source.iterdir() if p.name.startswith("quota-") and p.name.endswith("Z.db"))
        if not found:
            raise BackupFailed(f"{source}: no backup (quota-<UTC time>Z.db) in this folder")
        source = found[-1]
        say(f"the newest backup in the folder: {source}")
    if not source.is_file():
        raise BackupFailed(f"{source}: no such file")
    started = time.monotonic()
    candidate = target.with_name(target.name + ".restore")
    candidate.unlink(missing_ok=True)
    try:
        _private(candidate)
        shutil.copyfile(source, candidate)
        say(f"checking {source} ...")
        users, ledger, version = check_copy(candidate, values, earlier=False)
        kept = None
        if target.exists():
            if _in_use(target):
                raise BackupFailed(f"{target}: a hub (or another process) has it open: stop the hub first "
                                   "(z2jh: scale the hub to 0, docs/upgrade.md); nothing was changed")
            kept = target.with_name(f"{target.name}.before-restore-{int(time.time())}")
            _private(kept)
            shutil.copyfile(target, kept)
        for stale in ("-wal", "-shm", "-journal"):
            target.with_name(target.name + stale).unlink(missing_ok=True)
        _into_place(candidate, target)
    finally:
        candidate.unlink(missing_ok=True)
    say(f"restored {target} from {source}: {users} users, {ledger} ledger rows, schema {version}, "
        f"in {time.monotonic() - started:.2f} s" + (f"; the database it replaced is kept as {kept}" if kept else ""))
    return kept


def listing(folders: list[Path]) -> list[str]:
    """What folders of backups hold (``jupyterhub-quota backups``, as ``quota-hub backups``): each
    ``quota-<UTC time>Z.db`` oldest first with its size and schema, and what the folder's
    scheduled backups last did."""
    lines = []
    for folder in folders:
        found = sorted(p for p in folder.iterdir() if p.name.startswith("quota-") and p.name.endswith("Z.db")) \
            if folder.is_dir() else []
        lines.append(f"{folder} ({len(found)} backup(s))")
        for p in found:
            try:
                with sqlite3.connect(f"file:{p}?mode=ro", uri=True) as c:
                    version, floor = schema_of(c)
                c.close()
                schema = f"schema {version} (floor {floor})"
            except sqlite3.DatabaseError as e:
                schema = f"unreadable: {e}"
            lines.append(f"  {p.name}  {p.stat().st_size / 2**20:.1f} MiB  {schema}")
        state = durability.read_state(folder) if folder.is_dir() else None
        if state:
            when = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t)) if t else "never"  # noqa: E731
            error = f": {state['last_error']}" if state.get("last_error") else ""
            lines.append(f"  last success {when(state.get('last_success'))} ({state.get('last_bytes', 0)} bytes); "
                         f"{state.get('failures', 0)} failure(s), the last {when(state.get('last_failure'))}{error}")
    return lines
