//! The SQLite bridge: a file (or `:memory:`), set up by the hosting contract (WAL, busy wait,
//! `synchronous`), prepared statements cached by their text, values bound and read one way.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, ToSql};

use crate::contract::{Durability, HostingContract};
use crate::runtime::Runtime;
use crate::sql::{for_each_param_row, push_json_row, Database, Dialect, Param, SqlError, SqlValue};

/// Prepared statements kept per connection (the engine has about 20, a host a few more).
const statement_cache_capacity: usize = 64;

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

/// One SQLite connection.
pub struct SqliteDb {
    conn: Connection,
    contract: Arc<HostingContract>,
}

/// Binds a parameter (the type is ours, the trait rusqlite's: a wrapper joins them).
struct Bind<'a, 'b>(&'b Param<'a>);

impl ToSql for Bind<'_, '_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self.0 {
            Param::Int(i) => ValueRef::Integer(*i),
            Param::Text(s) => ValueRef::Text(s.as_bytes()),
            Param::Null => ValueRef::Null,
        }))
    }
}

fn params(values: &[SqlValue]) -> Vec<Param<'_>> {
    values.iter().map(Param::from).collect()
}

fn column(v: ValueRef<'_>, i: usize) -> Result<Param<'_>, SqlError> {
    match v {
        ValueRef::Integer(n) => Ok(Param::Int(n)),
        ValueRef::Null => Ok(Param::Null),
        ValueRef::Text(t) => std::str::from_utf8(t)
            .map(|s| Param::Text(s.into()))
            .map_err(|_| SqlError::Other(format!("column {i}: text that is not UTF-8"))),
        ValueRef::Real(_) | ValueRef::Blob(_) => Err(SqlError::Other(format!(
            "column {i}: a float or blob, which the engine never stores"
        ))),
    }
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
        let conn = Connection::open(path).map_err(|e| contract.error("", format!("sqlite: {e}")))?;
        conn.set_prepared_statement_cache_capacity(statement_cache_capacity);
        let mut db = SqliteDb { conn, contract };
        let busy = options.busy_timeout.unwrap_or(db.contract.busy_wait);
        let c = db.contract.clone();
        c.set_up(&mut db, busy, options.durability.unwrap_or(Durability::Full))?;
        if options.no_auto_checkpoint {
            db.query("PRAGMA wal_autocheckpoint = 0", &[])?;
        }
        Ok(db)
    }

    /// A private in-memory database (tests, and calls that touch no storage).
    pub fn memory(rt: &Runtime) -> Result<SqliteDb, SqlError> {
        SqliteDb::open(rt, Path::new(":memory:"), SqliteOptions::default())
    }

    fn err(&self, e: rusqlite::Error) -> SqlError {
        let code = match &e {
            rusqlite::Error::SqliteFailure(f, _) => result_code_name(f.extended_code),
            _ => "",
        };
        self.contract.error(code, format!("sqlite: {e}"))
    }

    /// Runs `sql` with `params` and hands `row` each row's values, read one way for every caller.
    fn each_row(
        &self,
        sql: &str,
        params: &[Param<'_>],
        mut row: impl FnMut(&[Param<'_>]) -> Result<(), SqlError>,
    ) -> Result<(), SqlError> {
        let mut st = self.conn.prepare_cached(sql).map_err(|e| self.err(e))?;
        let n = st.column_count();
        let mut rows = st
            .query(rusqlite::params_from_iter(params.iter().map(Bind)))
            .map_err(|e| self.err(e))?;
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let mut values = Vec::with_capacity(n);
            for i in 0..n {
                values.push(column(r.get_ref(i).map_err(|e| self.err(e))?, i)?);
            }
            row(&values)?;
        }
        Ok(())
    }

    fn run_rows<'a>(
        &self,
        sql: &str,
        rows: impl FnOnce(&mut dyn FnMut(&[Param<'a>]) -> Result<(), SqlError>) -> Result<(), SqlError>,
    ) -> Result<u64, SqlError> {
        let mut st = self.conn.prepare_cached(sql).map_err(|e| self.err(e))?;
        let mut changed = 0u64;
        rows(&mut |row| {
            changed += st
                .execute(rusqlite::params_from_iter(row.iter().map(Bind)))
                .map_err(|e| self.err(e))? as u64;
            Ok(())
        })?;
        Ok(changed)
    }
}

/// SQLite's name of a result code's primary part (what the contract's error codes match).
fn result_code_name(extended: i32) -> &'static str {
    match extended & 0xff {
        5 => "SQLITE_BUSY",
        6 => "SQLITE_LOCKED",
        19 => "SQLITE_CONSTRAINT",
        _ => "SQLITE_ERROR",
    }
}

impl Database for SqliteDb {
    fn contract(&self) -> &Arc<HostingContract> {
        &self.contract
    }

    fn query(&mut self, sql: &str, values: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>, SqlError> {
        let mut out = Vec::new();
        self.each_row(sql, &params(values), |r| {
            out.push(r.iter().map(SqlValue::from).collect());
            Ok(())
        })?;
        Ok(out)
    }

    fn query_json(&mut self, sql: &str, params_json: &str) -> Result<String, SqlError> {
        // Rows go from SQLite straight into the JSON text: no row vectors in between.
        let params: Vec<Param<'_>> =
            serde_json::from_str(params_json).map_err(|e| SqlError::Other(format!("parameters: {e}")))?;
        let mut out = String::from("[");
        self.each_row(sql, &params, |r| {
            if out.len() > 1 {
                out.push(',');
            }
            push_json_row(&mut out, r.iter().cloned());
            Ok(())
        })?;
        out.push(']');
        Ok(out)
    }

    fn execute_many_json(&mut self, sql: &str, rows_json: &str) -> Result<u64, SqlError> {
        // Each row is bound straight from the JSON text as it is parsed.
        self.run_rows(sql, |f| for_each_param_row(rows_json, f))
    }

    fn execute_many(&mut self, sql: &str, rows: &[Vec<SqlValue>]) -> Result<u64, SqlError> {
        self.run_rows(sql, |f| rows.iter().try_for_each(|r| f(&params(r))))
    }

    fn in_transaction(&self) -> bool {
        !self.conn.is_autocommit()
    }

    fn write_lock_free(&mut self) -> Result<bool, SqlError> {
        // One try without waiting, then the usual wait back.
        let wait = self.query("PRAGMA busy_timeout", &[])?;
        self.query("PRAGMA busy_timeout = 0", &[])?;
        let tried = self.begin();
        let restore = format!("PRAGMA busy_timeout = {}", wait[0][0].as_int().unwrap_or(0));
        self.query(&restore, &[])?;
        match tried {
            Ok(()) => self.rollback().map(|()| true),
            Err(SqlError::Busy) => Ok(false),
            Err(e) => Err(e),
        }
    }
}
