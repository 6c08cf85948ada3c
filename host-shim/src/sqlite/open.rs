//! A SQLite connection and how it is opened: the process-wide setting once, then the file (or `:memory:`)
//! set up by the hosting contract (WAL, busy wait, `synchronous`), as the host's options adjust it.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::Connection;

use crate::contract::Durability;
use crate::contract::HostingContract;
use crate::runtime::Runtime;
use crate::sql::{Database, Dialect, SqlError};

/// One SQLite connection.
pub struct SqliteDb {
    pub(super) conn: Connection,
    pub(super) contract: Arc<HostingContract>,
}

/// Prepared statements kept per connection (the engine has about 20, a host a few more).
const STATEMENT_CACHE_CAPACITY: usize = 64;

/// How a connection is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SqliteOptions {
    /// `synchronous=FULL` unless `Normal`.
    pub durability: Option<Durability>,
    /// Off: SQLite's automatic checkpoint (inside whichever commit pushes the WAL past 1,000
    /// pages) is not run; a server runs a [`crate::Checkpointer`] instead.
    pub no_auto_checkpoint: bool,
    /// How long a writer waits for another's lock before `busy` (the contract's unless given).
    pub busy_timeout: Option<Duration>,
}

/// Process-wide, once, before the first connection: SQLite's memory statistics off (they take a
/// global mutex on every allocation, and several workers serialize on it; nothing reads them).
fn configure_sqlite() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: called before any connection of this process is opened (the `Once` runs ahead of every
    // `Connection::open` here); if SQLite was initialized already it returns SQLITE_MISUSE, harmless.
    ONCE.call_once(|| unsafe {
        rusqlite::ffi::sqlite3_config(rusqlite::ffi::SQLITE_CONFIG_MEMSTATUS, 0 as std::ffi::c_int);
    });
}

impl SqliteDb {
    /// Opens (creating if needed) a database file, or `:memory:`, set up by `rt`'s contract. The
    /// schema is the engine's: a [`crate::Worker`] runs its `migrate`.
    pub fn open(rt: &Runtime, path: &Path, options: SqliteOptions) -> Result<SqliteDb, SqlError> {
        configure_sqlite();
        let contract = rt.contract(Dialect::Sqlite);
        let driver = |e: rusqlite::Error| SqlError::from_driver(&contract, "", format!("sqlite: {e}"));
        let conn = Connection::open(path).map_err(driver)?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE_CAPACITY);
        // A plan fixed at prepare time. Without it SQLite 3.54 (rusqlite's bundled build) compiles a
        // statement again at every new binding when it has an ORDER BY and a `column = ?` term: the
        // grants read of every gate and session end spent 12 of its 13 us in the parser
        // (docs/performance.md). The engine's statements never want a plan made for one value.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
            .map_err(driver)?;
        let mut db = SqliteDb { conn, contract };
        let busy = options.busy_timeout.unwrap_or(db.contract.busy_wait);
        let durability = options.durability.unwrap_or(Durability::Full);
        let statements = rt
            .connection_setup(Dialect::Sqlite, busy, durability)
            .map_err(|e| SqlError::Other(e.to_string()))?;
        let c = db.contract.clone();
        crate::setup::set_up(&mut db, &statements, &c, busy)?;
        if options.no_auto_checkpoint {
            db.query("PRAGMA wal_autocheckpoint = 0", &[])?;
        }
        Ok(db)
    }

    /// A private in-memory database (tests, and calls that touch no storage).
    pub fn memory(rt: &Runtime) -> Result<SqliteDb, SqlError> {
        SqliteDb::open(rt, Path::new(":memory:"), SqliteOptions::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A statement with an ORDER BY and `column = ?` terms is not compiled again when it is run
    /// with other values (SQLite 3.54 did so at every binding unless the plan is fixed).
    #[test]
    fn statements_are_not_prepared_again_for_new_values() {
        let rt = Runtime::load(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join(crate::COMPONENT_PATH),
            crate::Limits::default(),
        )
        .unwrap();
        let db = SqliteDb::memory(&rt).unwrap();
        db.conn
            .execute_batch(
                "CREATE TABLE g (id INTEGER PRIMARY KEY, username TEXT NOT NULL, budget TEXT NOT NULL, remaining INTEGER NOT NULL);
                 CREATE INDEX g_held ON g (username, budget) WHERE remaining > 0;",
            )
            .unwrap();
        let sql =
            "SELECT id, remaining FROM g WHERE username = ?1 AND budget = ?2 AND remaining > 0 ORDER BY id";
        for i in 0..10 {
            let mut st = db.conn.prepare_cached(sql).unwrap();
            let n = st
                .query_map(rusqlite::params![format!("u{i}"), ""], |_| Ok(()))
                .unwrap()
                .count();
            assert_eq!(n, 0);
        }
        let st = db.conn.prepare_cached(sql).unwrap();
        assert_eq!(st.get_status(rusqlite::StatementStatus::RePrepare), 0);
    }
}
