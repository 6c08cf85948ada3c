//! Database URLs: `sqlite://FILE` (relative) or `sqlite:///abs/FILE`; a bare path means SQLite.

use std::path::PathBuf;

use quota_host::{SqliteBackend, SqliteOptions};

#[derive(Debug)]
pub enum Db {
    Sqlite(PathBuf),
}

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
    /// One connection (migrating the schema on first open). Servers turn SQLite's inline
    /// checkpoint off and run a background checkpointer instead.
    pub fn open(&self, auto_checkpoint: bool) -> Result<SqliteBackend, String> {
        match self {
            Db::Sqlite(path) => SqliteBackend::open_with(
                path,
                SqliteOptions {
                    auto_checkpoint,
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
