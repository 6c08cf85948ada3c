//! Database URLs: `sqlite://FILE` (relative) or `sqlite:///abs/FILE`; a bare path means SQLite;
//! `postgres://user@host[:port]/db` (or `postgresql://`) for several replicas on one database.

use std::path::PathBuf;
use std::time::Duration;

use quota_host::pg::PgDb;
use quota_host::{Database, Runtime, SqliteDb, SqliteOptions};

#[derive(Debug)]
pub enum Db {
    Sqlite(PathBuf),
    Postgres(String),
}

pub fn parse(url: &str) -> Result<Db, String> {
    if let Some(rest) = url.strip_prefix("sqlite://") {
        if rest.is_empty() {
            return Err(format!("--db {url}: no file named (e.g. sqlite://quota.db)"));
        }
        return Ok(Db::Sqlite(PathBuf::from(rest)));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok(Db::Postgres(url.to_string()));
    }
    if url.contains("://") {
        return Err(format!(
            "--db {url}: unknown scheme (expected sqlite://FILE or postgres://user@host/db)"
        ));
    }
    Ok(Db::Sqlite(PathBuf::from(url)))
}

impl Db {
    /// One connection (the schema is brought up to date by the engine worker that uses it).
    /// Servers turn SQLite's inline checkpoint off and run a background checkpointer instead. The
    /// busy wait is the engine's hosting contract's unless given (`serve --busy-timeout-ms`).
    pub fn open(
        &self,
        rt: &Runtime,
        auto_checkpoint: bool,
        busy_timeout: Option<Duration>,
    ) -> Result<Box<dyn Database>, String> {
        match self {
            Db::Sqlite(path) => SqliteDb::open(
                rt,
                path,
                SqliteOptions {
                    no_auto_checkpoint: !auto_checkpoint,
                    busy_timeout,
                    ..SqliteOptions::default()
                },
            )
            .map(|d| Box::new(d) as Box<dyn Database>)
            .map_err(|e| format!("database {}: {e}", path.display())),
            Db::Postgres(url) => PgDb::connect_with(rt, url, busy_timeout)
                .map(|d| Box::new(d) as Box<dyn Database>)
                .map_err(|e| format!("database {}: {e}", redact(url))),
        }
    }
}

/// A URL without its password, for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let user = &url[s + 3..at];
            let user = user.split(':').next().unwrap_or_default();
            format!("{}{user}@{}", &url[..s + 3], &url[at + 1..])
        }
        _ => url.to_string(),
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
        assert!(matches!(parse("postgres://u@h/db"), Ok(Db::Postgres(_))));
        assert!(matches!(parse("postgresql://u@h/db"), Ok(Db::Postgres(_))));
        assert_eq!(redact("postgres://u:secret@h:5432/db"), "postgres://u@h:5432/db");
    }
}
