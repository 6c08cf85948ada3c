"""The hub's start-up step for the quota database (docs/upgrade.md): the schema checked; when it
needs a migration, a SQLite file is backed up first (into ``<backup_dir>/pre-migration``, a folder
of its own that no rotation prunes: the rollback needs the backup of its upgrade, kept until an
operator removes it), then migrated, with progress in the hub's log. Engines opened after it find the schema
current. A schema of a newer release is used as it is when its floor allows this package, and
refused otherwise, naming the restore command (the engine's message)."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Callable, Optional

from ..host.engine import QuotaEngine
from . import backups

log = logging.getLogger("jupyterhub_quota")

#: Backups kept in the folder unless told otherwise (the chart's ``backup.keep``).
BACKUP_KEEP = 7


def default_backup_dir(path: str) -> Path:
    """Beside the database: ``<its folder>/quota-backups`` (its own PVC is better: docs/upgrade.md)."""
    return Path(path).resolve().parent / "quota-backups"


def pre_migration_dir(backup_dir: Path) -> Path:
    """Where the backups taken before a migration go: ``<backup_dir>/pre-migration``, never pruned."""
    return backup_dir / "pre-migration"


def start_up(path: str, values: dict, open_engine: Callable[[bool], QuotaEngine], *,
             backup_dir: Optional[str] = None, backup_keep: int = BACKUP_KEEP) -> tuple[int, int]:
    """Brings the quota database at ``path`` to this package's schema, backing a SQLite file up
    first. Returns (version found, version now)."""
    engine = open_engine(False)
    try:
        found, writes = engine.check_schema()
        if found == writes:
            return found, writes
        sqlite = "://" not in path and path != ":memory:"
        if found > 0 and sqlite:
            folder = pre_migration_dir(Path(backup_dir) if backup_dir else default_backup_dir(path))
            log.info("quota: the quota database has schema %d, this package writes %d: backing it up to %s first",
                     found, writes, folder)
            backups.backup(Path(path), folder, values, folder=True, keep=None, state=False,
                           say=lambda m: log.info("quota: %s", m))
        elif found > 0:
            log.warning("quota: migrating the PostgreSQL quota database without a backup by the hub: "
                        "take one with pg_dump before an upgrade (docs/upgrade.md)")
        started = time.monotonic()
        log.info("quota: %s ...", f"creating the quota database at schema {writes}" if found == 0
                 else f"migrating the quota database from schema {found} to {writes}")
        before, now = engine.migrate()
        log.info("quota: the quota database is at schema %d (from %d) in %.1f s", now, before, time.monotonic() - started)
        return before, now
    finally:
        engine.close()
