//! Database URLs: `sqlite://FILE` (relative) or `sqlite:///abs/FILE`; a bare path means SQLite.

use std::path::PathBuf;
use std::time::Duration;

use quota_host::{SqliteDb, SqliteOptions};

#[derive(Debug)]
pub enum Db {
    Sqlite(PathBuf),
}

/// How long a write waits for another process's lock before it fails as busy (HTTP 503), unless
/// `serve --busy-timeout-ms` says otherwise.
pub const busy_timeout_ms_default: u64 = 10_000;

pub fn parse(url: &str) -> Result<Db, String> {
    if let Some(rest) = url.strip_prefix("sqlite://") {
        if rest.is_empty() {
            return Err(format!("--db {url}: no file named (e.g. sqlite://quota.db)"));
        }
        return Ok(Db::Sqlite(PathBuf::from(rest)));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Err("--db: PostgreSQL is not supported by this build yet; use sqlite://FILE".into());
    }
    if url.contains("://") {
        return Err(format!("--db {url}: unknown scheme (expected sqlite://FILE)"));
    }
    Ok(Db::Sqlite(PathBuf::from(url)))
}

impl Db {
    /// One connection (the schema is brought up to date by the engine worker that uses it).
    /// Servers turn SQLite's inline checkpoint off and run a background checkpointer instead.
    pub fn open(&self, auto_checkpoint: bool, busy_timeout: Duration) -> Result<SqliteDb, String> {
        match self {
            Db::Sqlite(path) => SqliteDb::open_with(
                path,
                SqliteOptions {
                    auto_checkpoint,
                    busy_timeout,
                    ..SqliteOptions::default()
                },
            )
            .map_err(|e| format!("database {}: {e}", path.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert!(
            matches!(parse("sqlite://quota.db"), Ok(Db::Sqlite(p)) if p.as_path() == std::path::Path::new("quota.db"))
        );
        assert!(
            matches!(parse("sqlite:///tmp/q.db"), Ok(Db::Sqlite(p)) if p.as_path() == std::path::Path::new("/tmp/q.db"))
        );
        assert!(matches!(parse("q.db"), Ok(Db::Sqlite(_))));
        assert!(parse("sqlite://").is_err());
        assert!(parse("mysql://x").unwrap_err().contains("unknown scheme"));
        assert!(parse("postgres://h/db").unwrap_err().contains("PostgreSQL"));
    }
}
