//! `migrate`: the database brought to this binary's schema, the one step that does (servers and
//! other commands create an empty database but never migrate one). A SQLite file is backed up
//! first, with `backup`'s checks; PostgreSQL is dumped before by whoever runs this (the chart's
//! pre-upgrade Job runs pg_dump first). docs/upgrade.md.

use std::path::Path;
use std::time::Instant;

use quota_host::{HostError, Worker};

use crate::commands::backup;
use crate::engine;
use crate::storage::db::{self, Db};
use crate::storage::host_tables;

pub(super) fn run(
    url: &str,
    backup_dir: Option<&Path>,
    no_backup: bool,
    values_path: &Path,
) -> Result<(), String> {
    let started = Instant::now();
    let target = db::parse(url)?;
    let shown = db::redact(url);
    if let (Db::Postgres(_), Some(dir)) = (&target, backup_dir) {
        return Err(format!(
            "--backup-dir {}: PostgreSQL is backed up with pg_dump before the migration (the \
             chart's pre-upgrade Job does; docs/upgrade.md), not by quota-hub",
            dir.display()
        ));
    }
    let rt = engine::runtime()?;
    let doc = crate::values::read(values_path)?;
    let conn = target.open(&rt, true, None)?;
    let mut w = Worker::unmigrated(rt.clone(), conn, &doc.to_string()).map_err(|e| e.to_string())?;
    let (found, writes) = match w.check_schema() {
        Ok(m) => {
            host_tables::ensure_schema(w.db()).map_err(|e| e.to_string())?;
            println!(
                "{shown}: schema {}, which this quota-hub writes as it is; nothing to migrate",
                m.to_version
            );
            return Ok(());
        }
        Err(HostError::NeedsMigration { found, writes }) => (found, writes),
        Err(e) => return Err(format!("{shown}: {e}")),
    };
    if found > 0 && matches!(target, Db::Sqlite(_)) {
        match (backup_dir, no_backup) {
            (Some(dir), _) => {
                eprintln!("{shown}: schema {found}, this quota-hub writes {writes}: backing it up first");
                std::fs::create_dir_all(dir).map_err(|e| format!("--backup-dir {}: {e}", dir.display()))?;
                // Never pruned: a pre-migration backup is the rollback's, kept until an operator
                // removes it (`quota-hub backups` lists them).
                backup::backup(url, dir, values_path, false, None)
                    .map_err(|e| format!("the backup before the migration failed, nothing migrated: {e}"))?;
            }
            (None, true) => eprintln!("{shown}: schema {found}: migrating without a backup (--no-backup)"),
            (None, false) => {
                return Err(format!(
                    "{shown}: schema {found} needs its migration to {writes}: give --backup-dir DIR \
                     for the backup taken first (or --no-backup if you have a copy); nothing migrated"
                ))
            }
        }
    }
    eprintln!(
        "{shown}: {} schema {writes} ...",
        if found == 0 { "creating" } else { "migrating to" }
    );
    let m = w.migrate().map_err(|e| format!("{shown}: {e}"))?;
    host_tables::ensure_schema(w.db()).map_err(|e| e.to_string())?;
    println!(
        "{shown}: schema {} -> {} in {:.1} s",
        m.from_version,
        m.to_version,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
