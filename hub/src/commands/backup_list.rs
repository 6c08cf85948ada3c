//! `backups DIR...`: what a folder of backups holds, for the runbooks (docs/upgrade.md names the
//! pre-migration file to restore): each `quota-<UTC time>Z.db` with its size and schema version,
//! newest last, and what the folder's scheduled backups last did (`storage::backup_state`).

use std::path::{Path, PathBuf};

use quota_host::{SqliteDb, SqliteOptions};

use crate::commands::backup::schema_of;
use crate::engine;
use crate::storage::backup_state;

fn when(t: Option<i64>) -> String {
    t.map_or_else(
        || "never".to_string(),
        |t| format!("{}Z", quota_core::Timestamp(t)),
    )
}

/// The backup files of a folder, oldest first (their names sort as their times).
fn files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("quota-") && n.ends_with("Z.db"))
        })
        .collect();
    out.sort();
    Ok(out)
}

pub(super) fn run(dirs: &[PathBuf]) -> Result<(), String> {
    let rt = engine::runtime()?;
    for dir in dirs {
        let found = files(dir)?;
        println!("{} ({} backup(s))", dir.display(), found.len());
        for f in &found {
            let size = std::fs::metadata(f).map_or(0, |m| m.len());
            let schema = SqliteDb::open(&rt, f, SqliteOptions::default())
                .map_err(|e| e.to_string())
                .and_then(|mut db| schema_of(&mut db))
                .map_or_else(
                    |e| format!("unreadable: {e}"),
                    |(v, floor)| format!("schema {v} (floor {floor})"),
                );
            println!(
                "  {}  {:.1} MiB  {schema}",
                f.file_name().map(|n| n.to_string_lossy()).unwrap_or_default(),
                size as f64 / (1024.0 * 1024.0)
            );
        }
        if let Some(s) = backup_state::read(dir)? {
            println!(
                "  last success {} ({} bytes); {} failure(s), the last {}{}",
                when(s.last_success),
                s.last_bytes,
                s.failures,
                when(s.last_failure),
                s.last_error.map(|e| format!(": {e}")).unwrap_or_default()
            );
        }
    }
    Ok(())
}
