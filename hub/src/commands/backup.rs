//! `backup` of a SQLite database, and what `restore` (`restore.rs`) shares with it: the check of
//! a copy, moving files into place privately.
//!
//! A backup is `VACUUM INTO` a file beside the output, in one read transaction: a consistent copy
//! of the moment it began, taken while the server serves (in WAL mode a reader never blocks a
//! writer), checked (integrity, schema version, every balance against its ledger), then renamed
//! into place: a backup that exists is whole. A restore checks the file the same way before it
//! touches the database, keeps the database it replaces beside it, and refuses while another
//! process has the database open. PostgreSQL has its own tools (docs/postgres.md).

use std::path::{Path, PathBuf};
use std::time::Instant;

use quota_host::{Database, SqlCell, SqliteDb, SqliteOptions, Worker};

use crate::commands::migrate_db;
use crate::engine;
use crate::storage::db::{self, Db};

/// What a checked copy holds.
pub(super) struct Checked {
    pub users: i64,
    pub ledger: i64,
    pub version: i64,
}

pub(super) fn sqlite_only(url: &str, what: &str) -> Result<PathBuf, String> {
    match db::parse(url)? {
        Db::Sqlite(p) if p != Path::new(":memory:") => Ok(p),
        Db::Sqlite(_) => Err(format!("--db {url}: an in-memory database has nothing to {what}")),
        Db::Postgres(_) => Err(format!(
            "--db {}: {what} is for SQLite files; back up PostgreSQL with pg_dump and restore it with \
             pg_restore (docs/postgres.md)",
            db::redact(url)
        )),
    }
}

fn one_int(db: &mut dyn Database, sql: &str) -> Result<i64, String> {
    match db
        .query(sql, &[])
        .map_err(|e| e.to_string())?
        .first()
        .and_then(|r| r.first())
    {
        Some(SqlCell::Int(n)) => Ok(*n),
        other => Err(format!("{sql}: {other:?}")),
    }
}

fn file_size(p: &Path) -> f64 {
    std::fs::metadata(p).map_or(0.0, |m| m.len() as f64 / (1024.0 * 1024.0))
}

/// The schema version this binary writes (a fresh in-memory database brought up to it).
fn current_version(rt: &std::sync::Arc<quota_host::Runtime>, doc: &serde_json::Value) -> Result<i64, String> {
    let mem =
        SqliteDb::open(rt, Path::new(":memory:"), SqliteOptions::default()).map_err(|e| e.to_string())?;
    let mut w = Worker::new(rt.clone(), Box::new(mem), &doc.to_string()).map_err(|e| e.to_string())?;
    Ok(i64::from(w.migrate().map_err(|e| e.to_string())?.to_version))
}

/// A database's schema version and floor, read as the engine reads them (`schema::Schema` in the
/// component): the floor where engines before schema 10 read their version, the version the newest
/// row of `quota_schema` when there is one.
pub(crate) fn schema_of(db: &mut dyn Database) -> Result<(i64, i64), String> {
    let floor = one_int(db, "PRAGMA user_version")?;
    let recorded = one_int(
        db,
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'quota_schema'",
    )?;
    let version = if recorded == 1 {
        one_int(db, "SELECT COALESCE(MAX(version), 0) FROM quota_schema")?.max(floor)
    } else {
        floor
    };
    Ok((version, floor))
}

/// Which schema versions a check accepts besides those this binary writes as they are.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Accept {
    /// A backup: any earlier version too (the copy taken before a migration).
    Earlier,
    /// A restore: only what this binary writes as it is (an earlier copy is restored by the
    /// release that made it, then upgraded).
    Writable,
}

/// Checks a copy (which may be changed: it is ours): SQLite's integrity check, its schema version
/// against this binary's, and every balance equal to the sum of its ledger. The copy is never
/// migrated: a backup keeps the schema it was taken at.
pub(super) fn check(
    rt: &std::sync::Arc<quota_host::Runtime>,
    doc: &serde_json::Value,
    copy: &Path,
    shown: &str,
    accept: Accept,
) -> Result<Checked, String> {
    let mut db = SqliteDb::open(rt, copy, SqliteOptions::default())
        .map_err(|e| format!("{shown}: does not open as a SQLite database: {e}"))?;
    let integrity = db
        .query("PRAGMA integrity_check", &[])
        .map_err(|e| format!("{shown}: not a SQLite database, or damaged: {e}"))?;
    let verdict: Vec<String> = integrity
        .iter()
        .filter_map(|r| r.first().and_then(|v| v.as_text().map(str::to_string)))
        .collect();
    if verdict != ["ok"] {
        return Err(format!(
            "{shown}: SQLite's integrity check fails: {}",
            verdict.join("; ")
        ));
    }
    let (version, floor) = schema_of(&mut db)?;
    let current = current_version(rt, doc)?;
    if version > current && floor > current {
        return Err(format!(
            "{shown}: it has schema version {version} of a newer release, which engines of schema \
             {floor} or newer may write; this quota-hub writes version {current} (use that release)"
        ));
    }
    if version < current && accept == Accept::Writable {
        return Err(format!(
            "{shown}: it has schema version {version}, this quota-hub writes version {current} \
             (restore it with the quota-hub that made it, then upgrade: docs/upgrade.md)"
        ));
    }
    // Budgets came with schema 6; an earlier copy has only personal balances.
    let wrong = if version >= 6 {
        migrate_db::ledger_mismatches(&mut db)?
    } else {
        Vec::new()
    };
    if !wrong.is_empty() {
        return Err(format!(
            "{shown}: {} balance(s) differ from the sum of their ledger: {}",
            wrong.len(),
            wrong.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(Checked {
        users: one_int(&mut db, "SELECT COUNT(*) FROM users")?,
        ledger: one_int(&mut db, "SELECT COUNT(*) FROM transactions")?,
        version,
    })
}

/// `path` with `suffix` appended to its file name.
pub(super) fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

pub(super) fn remove_with_wal(p: &Path) {
    for s in ["", "-wal", "-shm", "-journal"] {
        let _ = std::fs::remove_file(beside(p, s));
    }
}

/// Makes `to` the file `from` is now, durably: fsync, rename, fsync of the folder.
pub(super) fn move_into_place(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::File::open(from)
        .and_then(|f| f.sync_all())
        .map_err(|e| format!("{}: {e}", from.display()))?;
    std::fs::rename(from, to).map_err(|e| format!("{}: {e}", to.display()))?;
    if let Some(dir) = to.parent().filter(|d| !d.as_os_str().is_empty()) {
        let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
    }
    Ok(())
}

/// An empty file only its owner may read and write (mode 0600): what `VACUUM INTO` fills, so a
/// copy of every balance and ledger row is never readable by others, not even while it is written.
pub(super) fn private_file(p: &Path) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(p)
        .map(drop)
        .map_err(|e| format!("{}: {e}", p.display()))
}

/// Mode 0600 again after `std::fs::copy`, which gives the copy its source's mode.
pub(super) fn restrict(p: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| format!("{}: {e}", p.display()))
}

/// `VACUUM INTO` `out` (a new file, mode 0600) from the database at `src`, in one read transaction.
pub(super) fn vacuum_into(rt: &quota_host::Runtime, src: &Path, out: &Path) -> Result<(), String> {
    private_file(out)?;
    let mut db =
        SqliteDb::open(rt, src, SqliteOptions::default()).map_err(|e| format!("{}: {e}", src.display()))?;
    let target = out
        .to_str()
        .ok_or_else(|| format!("{}: not a UTF-8 path", out.display()))?;
    db.query("VACUUM INTO ?1", &[SqlCell::Text(target.to_string())])
        .map_err(|e| format!("copying {} to {}: {e}", src.display(), out.display()))?;
    Ok(())
}

/// In a folder (`-o DIR/`): a backup is `quota-<UTC time>.db`, and `keep` says how many of them
/// stay (the oldest go once the new one is whole).
fn in_folder(dir: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("-o {}: {e}", dir.display()))?;
    let now = crate::clock::Clock::system()?.now().to_string();
    let stamp: String = now.chars().filter(|c| c.is_ascii_digit() || *c == 'T').collect();
    Ok(dir.join(format!("quota-{stamp}Z.db")))
}

fn prune(dir: &Path, keep: usize) -> Result<Vec<PathBuf>, String> {
    let mut backups: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("-o {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("quota-") && n.ends_with("Z.db"))
        })
        .collect();
    // The names sort as their times.
    backups.sort();
    let gone = backups.len().saturating_sub(keep);
    let old: Vec<PathBuf> = backups.into_iter().take(gone).collect();
    for p in &old {
        std::fs::remove_file(p).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(old)
}

/// `backup`: into a file, or into a folder (`-o DIR/`), where every outcome is recorded for the
/// metrics (`storage::backup_state`): a scheduled backup that fails is counted, never only a log
/// line.
pub(super) fn backup(
    url: &str,
    out: &Path,
    values_path: &Path,
    force: bool,
    keep: Option<usize>,
) -> Result<(), String> {
    let folder = out.is_dir() || out.as_os_str().to_string_lossy().ends_with('/');
    let result = backup_to(url, out, values_path, force, keep, folder);
    if folder {
        let now = crate::clock::Clock::system()?.now().seconds();
        let outcome = result.as_ref().map(|b| *b).map_err(String::as_str);
        crate::storage::backup_state::record(out, outcome, now)
            .map_err(|e| format!("recording the backup's outcome: {e}"))?;
    }
    result.map(drop)
}

/// [`backup`]'s copy; the backup's size in bytes.
fn backup_to(
    url: &str,
    out: &Path,
    values_path: &Path,
    force: bool,
    keep: Option<usize>,
    folder: bool,
) -> Result<u64, String> {
    let started = Instant::now();
    let src = sqlite_only(url, "back up")?;
    if !src.exists() {
        return Err(format!("--db {url}: no such file"));
    }
    if keep.is_some() && !folder {
        return Err(format!(
            "--keep: only with a folder as -o (e.g. -o {}/)",
            out.display()
        ));
    }
    let named;
    let out = if folder {
        named = in_folder(out)?;
        named.as_path()
    } else {
        out
    };
    if out.exists() && !force {
        return Err(format!(
            "-o {}: exists already (give --force to replace it)",
            out.display()
        ));
    }
    let rt = engine::runtime()?;
    let doc = crate::values::read(values_path)?;
    let partial = beside(out, ".partial");
    remove_with_wal(&partial);
    eprintln!(
        "backing up {} ({:.1} MiB) to {} ...",
        src.display(),
        file_size(&src),
        out.display()
    );
    let result = vacuum_into(&rt, &src, &partial).and_then(|()| {
        let took = started.elapsed();
        eprintln!("copied in {:.2} s; checking the copy ...", took.as_secs_f64());
        let checked = check(
            &rt,
            &doc,
            &partial,
            &format!("the copy of {}", src.display()),
            Accept::Earlier,
        )?;
        // The check opened the copy (WAL mode): one plain file again before it moves into place.
        vacuum_into(&rt, &partial, &beside(out, ".final"))?;
        Ok(checked)
    });
    remove_with_wal(&partial);
    let checked = match result {
        Ok(c) => c,
        Err(e) => {
            remove_with_wal(&beside(out, ".final"));
            return Err(format!("{e}; no backup written"));
        }
    };
    move_into_place(&beside(out, ".final"), out)?;
    println!(
        "backup {}: {} users, {} ledger rows, schema {}, {:.1} MiB, in {:.2} s; integrity ok, every balance equals its ledger",
        out.display(),
        checked.users,
        checked.ledger,
        checked.version,
        file_size(out),
        started.elapsed().as_secs_f64()
    );
    let bytes = std::fs::metadata(out).map_or(0, |m| m.len());
    if let (Some(n), Some(dir)) = (keep, out.parent()) {
        for p in prune(dir, n)? {
            println!("removed {} (--keep {n})", p.display());
        }
    }
    Ok(bytes)
}
