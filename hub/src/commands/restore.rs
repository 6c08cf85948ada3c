//! `restore` of a SQLite database from a backup: the file checked on a copy first (integrity, the
//! schema, every balance against its ledger), refused while another process has the database
//! open, the database it replaces kept beside it, the checked copy moved into place.

use std::path::Path;
use std::time::Instant;

use quota_host::{Database, SqliteDb, SqliteOptions};

use super::backup::{
    beside, check, move_into_place, private_file, remove_with_wal, restrict, sqlite_only, vacuum_into, Accept,
};
use crate::engine;

pub(super) fn restore(url: &str, input: &Path, values_path: &Path) -> Result<(), String> {
    let started = Instant::now();
    let target = sqlite_only(url, "restore")?;
    if !input.is_file() {
        return Err(format!("-i {}: no such file", input.display()));
    }
    let rt = engine::runtime()?;
    let doc = crate::values::read(values_path)?;
    // Checked on a copy: the backup itself is never changed.
    let candidate = beside(&target, ".restore");
    remove_with_wal(&candidate);
    private_file(&candidate)?;
    std::fs::copy(input, &candidate).map_err(|e| format!("-i {}: {e}", input.display()))?;
    restrict(&candidate)?;
    eprintln!("checking {} ...", input.display());
    let checked = check(
        &rt,
        &doc,
        &candidate,
        &format!("-i {}", input.display()),
        Accept::Writable,
    )
    .and_then(|c| {
        vacuum_into(&rt, &candidate, &beside(&target, ".restore-final"))?;
        Ok(c)
    });
    remove_with_wal(&candidate);
    let checked = match checked {
        Ok(c) => c,
        Err(e) => {
            remove_with_wal(&beside(&target, ".restore-final"));
            return Err(format!("{e}; {} was not changed", target.display()));
        }
    };
    let mut kept = None;
    if target.exists() {
        // No other process may have the file open: leaving WAL mode needs every other connection
        // gone (a server, a CLI), and leaves one plain file to keep and replace.
        let mut db = SqliteDb::open(&rt, &target, SqliteOptions::default())
            .map_err(|e| format!("{}: {e}", target.display()))?;
        let mode = db.query("PRAGMA journal_mode = DELETE", &[]).ok();
        let left_wal = !matches!(
            mode.as_ref()
                .and_then(|r| r.first())
                .and_then(|r| r.first())
                .and_then(|v| v.as_text()),
            Some("delete")
        );
        drop(db);
        if left_wal {
            remove_with_wal(&beside(&target, ".restore-final"));
            return Err(format!(
                "{}: another process has it open (a running quota-hub or hub?): stop it, then restore; nothing was changed",
                target.display()
            ));
        }
        let keep = beside(
            &target,
            &format!(
                ".before-restore-{}",
                crate::clock::Clock::system()?.now().seconds()
            ),
        );
        private_file(&keep)?;
        std::fs::copy(&target, &keep).map_err(|e| format!("keeping {}: {e}", target.display()))?;
        restrict(&keep)?;
        kept = Some(keep);
    }
    for stale in ["-wal", "-shm", "-journal"] {
        let _ = std::fs::remove_file(beside(&target, stale));
    }
    move_into_place(&beside(&target, ".restore-final"), &target)?;
    println!(
        "restored {} from {}: {} users, {} ledger rows, schema {}, in {:.2} s{}",
        target.display(),
        input.display(),
        checked.users,
        checked.ledger,
        checked.version,
        started.elapsed().as_secs_f64(),
        kept.map(|k| format!("; the database it replaced is kept as {}", k.display()))
            .unwrap_or_default()
    );
    Ok(())
}
