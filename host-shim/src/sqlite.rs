//! The SQLite bridge: a file (or `:memory:`), WAL, `synchronous=FULL` by default, prepared statements
//! cached by their text. It runs the statements the component sends; the schema is the component's.

use std::path::Path;
use std::time::Duration;

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, ErrorCode, ToSql};

use quota_core::json::{push_int, push_string};

use crate::sql::{for_each_param_row, Database, Dialect, Param, SqlError, SqlValue};

/// Page cache per connection, in KiB.
const cache_kib: i64 = 64 * 1024;

/// How long a writer waits for another process's write lock before failing with `busy`.
const busy_timeout_ms: u64 = 10_000;

/// Prepared statements kept per connection (the engine has about 20, a host a few more).
const statement_cache_capacity: usize = 64;

/// How hard SQLite works to make a commit durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// `synchronous=FULL`: an acknowledged commit survives power loss (the default).
    Full,
    /// `synchronous=NORMAL`: survives a process crash, may lose the last commits on power loss.
    Normal,
}

/// How a connection is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqliteOptions {
    pub durability: Durability,
    /// SQLite's automatic checkpoint, which runs inside whichever commit pushes the WAL past 1,000
    /// pages (a large refresh pays tens of milliseconds for it). A server turns it off on its request
    /// connections and runs a [`Checkpointer`] instead.
    pub auto_checkpoint: bool,
    /// How long a writer waits for another's lock before `busy`.
    pub busy_timeout: Duration,
}

impl Default for SqliteOptions {
    fn default() -> SqliteOptions {
        SqliteOptions {
            durability: Durability::Full,
            auto_checkpoint: true,
            busy_timeout: Duration::from_millis(busy_timeout_ms),
        }
    }
}

/// What one checkpoint did: frames in the WAL, and frames copied into the database file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointStats {
    pub wal_frames: i64,
    pub checkpointed: i64,
}

/// One SQLite connection.
pub struct SqliteDb {
    conn: Connection,
    /// How long a statement waits for another connection's lock (restored after a try without it).
    busy_timeout: Duration,
}

fn sql_err(e: rusqlite::Error) -> SqlError {
    match &e {
        rusqlite::Error::SqliteFailure(f, msg) => match f.code {
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => SqlError::Busy,
            ErrorCode::ConstraintViolation => {
                SqlError::Constraint(msg.clone().unwrap_or_else(|| e.to_string()))
            }
            _ => SqlError::Other(format!("sqlite: {e}")),
        },
        _ => SqlError::Other(format!("sqlite: {e}")),
    }
}

/// Switches the file to WAL. On a new file several processes starting at once all try to; the
/// switch needs the file to itself and SQLite answers `busy` at once, without its busy handler (a
/// reader upgrading its lock could otherwise deadlock), so it is retried here for up to `wait`.
fn enter_wal(conn: &Connection, wait: Duration) -> Result<(), SqlError> {
    let deadline = std::time::Instant::now() + wait;
    let mut pause = Duration::from_millis(1);
    loop {
        let mode = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0));
        match mode.map_err(sql_err) {
            Ok(m) if m.eq_ignore_ascii_case("wal") || m.eq_ignore_ascii_case("memory") => return Ok(()),
            Ok(m) => {
                return Err(SqlError::Other(format!(
                    "sqlite: could not switch to WAL (journal mode stays {m})"
                )))
            }
            Err(SqlError::Busy) if std::time::Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Binds a value (the value type is core's, the trait rusqlite's: a wrapper joins them).
struct Bind<'a>(&'a SqlValue);

impl ToSql for Bind<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self.0 {
            SqlValue::Int(i) => ToSqlOutput::Borrowed(ValueRef::Integer(*i)),
            SqlValue::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            SqlValue::Null => ToSqlOutput::Borrowed(ValueRef::Null),
        })
    }
}

/// Binds a parameter borrowed from the component's JSON.
struct BindParam<'a, 'b>(&'b Param<'a>);

impl ToSql for BindParam<'_, '_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self.0 {
            Param::Int(i) => ToSqlOutput::Borrowed(ValueRef::Integer(*i)),
            Param::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Param::Null => ToSqlOutput::Borrowed(ValueRef::Null),
        })
    }
}

fn column(v: ValueRef<'_>, i: usize) -> Result<SqlValue, SqlError> {
    match v {
        ValueRef::Integer(n) => Ok(SqlValue::Int(n)),
        ValueRef::Null => Ok(SqlValue::Null),
        ValueRef::Text(t) => std::str::from_utf8(t)
            .map(|s| SqlValue::Text(s.to_string()))
            .map_err(|_| SqlError::Other(format!("column {i}: text that is not UTF-8"))),
        ValueRef::Real(_) | ValueRef::Blob(_) => Err(SqlError::Other(format!(
            "column {i}: a float or blob, which the engine never stores"
        ))),
    }
}

/// Process-wide SQLite settings, once, before the first connection. SQLite keeps memory statistics
/// by default, taking a global mutex on every allocation it makes; nothing here reads them, and
/// with several workers they serialize on that mutex.
fn configure_sqlite() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: `sqlite3_config` is called before any connection of this process is opened (the
        // `Once` runs ahead of every `Connection::open` here); if SQLite was already initialized by
        // other code it returns SQLITE_MISUSE and changes nothing, which is harmless.
        unsafe {
            rusqlite::ffi::sqlite3_config(rusqlite::ffi::SQLITE_CONFIG_MEMSTATUS, 0 as std::ffi::c_int);
        }
    });
}

/// Runs a statement without rows through the statement cache (BEGIN, COMMIT: parsed once).
fn run_cached(conn: &Connection, sql: &str) -> Result<(), SqlError> {
    conn.prepare_cached(sql)
        .and_then(|mut st| st.execute([]))
        .map(|_| ())
        .map_err(sql_err)
}

impl SqliteDb {
    /// Opens (creating if needed) a database file. The schema is the engine's: call its `migrate`.
    pub fn open(path: &Path, durability: Durability) -> Result<SqliteDb, SqlError> {
        Self::open_with(
            path,
            SqliteOptions {
                durability,
                ..SqliteOptions::default()
            },
        )
    }

    /// Opens with explicit options.
    pub fn open_with(path: &Path, options: SqliteOptions) -> Result<SqliteDb, SqlError> {
        configure_sqlite();
        let conn = Connection::open(path).map_err(sql_err)?;
        let db = Self::setup(conn, options)?;
        if !options.auto_checkpoint {
            db.conn
                .pragma_update(None, "wal_autocheckpoint", 0)
                .map_err(sql_err)?;
        }
        Ok(db)
    }

    /// A private in-memory database: the in-memory store of tests and hosts without persistence.
    pub fn memory() -> Result<SqliteDb, SqlError> {
        configure_sqlite();
        Self::setup(
            Connection::open_in_memory().map_err(sql_err)?,
            SqliteOptions::default(),
        )
    }

    fn setup(conn: Connection, options: SqliteOptions) -> Result<SqliteDb, SqlError> {
        conn.busy_timeout(options.busy_timeout).map_err(sql_err)?;
        enter_wal(&conn, options.busy_timeout)?;
        let sync = match options.durability {
            Durability::Full => "FULL",
            Durability::Normal => "NORMAL",
        };
        conn.pragma_update(None, "synchronous", sync).map_err(sql_err)?;
        // A large refresh touches every user row and appends as many audit rows in one transaction;
        // with SQLite's default 2 MB cache those pages spill to the WAL before the commit.
        conn.pragma_update(None, "cache_size", -cache_kib)
            .map_err(sql_err)?;
        conn.set_prepared_statement_cache_capacity(statement_cache_capacity);
        Ok(SqliteDb {
            conn,
            busy_timeout: options.busy_timeout,
        })
    }

    /// Copies committed WAL frames into the database file without waiting for readers or writers
    /// (`PASSIVE`): safe to run at any time from any connection.
    pub fn checkpoint(&self) -> Result<CheckpointStats, SqlError> {
        self.conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                Ok(CheckpointStats {
                    wal_frames: r.get(1)?,
                    checkpointed: r.get(2)?,
                })
            })
            .map_err(sql_err)
    }

    /// The schema version of this file (`PRAGMA user_version`, which the engine's migrations set).
    pub fn schema_version(&self) -> Result<i64, SqlError> {
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(sql_err)
    }
}

impl Database for SqliteDb {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>, SqlError> {
        let mut st = self.conn.prepare_cached(sql).map_err(sql_err)?;
        let n = st.column_count();
        let mut rows = st
            .query(rusqlite::params_from_iter(params.iter().map(Bind)))
            .map_err(sql_err)?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(sql_err)? {
            let mut row = Vec::with_capacity(n);
            for i in 0..n {
                row.push(column(r.get_ref(i).map_err(sql_err)?, i)?);
            }
            out.push(row);
        }
        Ok(out)
    }

    fn query_json(&mut self, sql: &str, params_json: &str) -> Result<String, SqlError> {
        // Rows go from SQLite straight into the JSON text: no row vectors in between.
        let params: Vec<Param<'_>> =
            serde_json::from_str(params_json).map_err(|e| SqlError::Other(format!("parameters: {e}")))?;
        let mut st = self.conn.prepare_cached(sql).map_err(sql_err)?;
        let n = st.column_count();
        let mut rows = st
            .query(rusqlite::params_from_iter(params.iter().map(BindParam)))
            .map_err(sql_err)?;
        let mut out = String::from("[");
        let mut first = true;
        while let Some(r) = rows.next().map_err(sql_err)? {
            out.push_str(if first { "[" } else { ",[" });
            first = false;
            for i in 0..n {
                if i > 0 {
                    out.push(',');
                }
                match r.get_ref(i).map_err(sql_err)? {
                    ValueRef::Integer(v) => push_int(&mut out, v),
                    ValueRef::Null => out.push_str("null"),
                    ValueRef::Text(t) => push_string(
                        &mut out,
                        std::str::from_utf8(t)
                            .map_err(|_| SqlError::Other(format!("column {i}: text that is not UTF-8")))?,
                    ),
                    ValueRef::Real(_) | ValueRef::Blob(_) => {
                        return Err(SqlError::Other(format!(
                            "column {i}: a float or blob, which the engine never stores"
                        )))
                    }
                }
            }
            out.push(']');
        }
        out.push(']');
        Ok(out)
    }

    fn execute_many_json(&mut self, sql: &str, rows_json: &str) -> Result<u64, SqlError> {
        // Each row is bound straight from the JSON text as it is parsed.
        let mut st = self.conn.prepare_cached(sql).map_err(sql_err)?;
        let mut changed = 0u64;
        for_each_param_row(rows_json, |row| {
            changed += st
                .execute(rusqlite::params_from_iter(row.iter().map(BindParam)))
                .map_err(sql_err)? as u64;
            Ok(())
        })?;
        Ok(changed)
    }

    fn execute_many(&mut self, sql: &str, rows: &[Vec<SqlValue>]) -> Result<u64, SqlError> {
        let mut st = self.conn.prepare_cached(sql).map_err(sql_err)?;
        let mut changed = 0u64;
        for row in rows {
            changed += st
                .execute(rusqlite::params_from_iter(row.iter().map(Bind)))
                .map_err(sql_err)? as u64;
        }
        Ok(changed)
    }

    fn begin(&mut self) -> Result<(), SqlError> {
        run_cached(&self.conn, "BEGIN IMMEDIATE")
    }

    fn begin_read(&mut self) -> Result<(), SqlError> {
        run_cached(&self.conn, "BEGIN DEFERRED")
    }

    fn write_lock_free(&mut self) -> Result<bool, SqlError> {
        // One try without waiting, then the usual wait back.
        self.conn.busy_timeout(Duration::ZERO).map_err(sql_err)?;
        let tried = run_cached(&self.conn, "BEGIN IMMEDIATE");
        self.conn.busy_timeout(self.busy_timeout).map_err(sql_err)?;
        match tried {
            Ok(()) => run_cached(&self.conn, "ROLLBACK").map(|()| true),
            Err(SqlError::Busy) => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn savepoint(&mut self) -> Result<(), SqlError> {
        run_cached(&self.conn, "SAVEPOINT quota_call")
    }

    fn release_savepoint(&mut self) -> Result<(), SqlError> {
        run_cached(&self.conn, "RELEASE SAVEPOINT quota_call")
    }

    fn rollback_to_savepoint(&mut self) -> Result<(), SqlError> {
        run_cached(&self.conn, "ROLLBACK TO SAVEPOINT quota_call")?;
        run_cached(&self.conn, "RELEASE SAVEPOINT quota_call")
    }

    fn commit(&mut self) -> Result<(), SqlError> {
        run_cached(&self.conn, "COMMIT")
    }

    fn rollback(&mut self) -> Result<(), SqlError> {
        if self.conn.is_autocommit() {
            return Ok(());
        }
        self.conn.execute_batch("ROLLBACK").map_err(sql_err)
    }

    fn dump(&mut self) -> Result<String, SqlError> {
        // Every table but SQLite's own, by name; rows in primary-key order.
        let tables: Vec<String> = {
            let mut st = self
                .conn
                .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
                .map_err(sql_err)?;
            let names = st.query_map([], |r| r.get(0)).map_err(sql_err)?;
            names.collect::<Result<_, _>>().map_err(sql_err)?
        };
        let mut out = String::new();
        for table in tables {
            let n = self
                .conn
                .prepare(&format!("SELECT * FROM \"{table}\""))
                .map_err(sql_err)?
                .column_count();
            let order: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
            let mut st = self
                .conn
                .prepare(&format!(
                    "SELECT * FROM \"{table}\" ORDER BY {}",
                    order.join(", ")
                ))
                .map_err(sql_err)?;
            let rows = st
                .query_map([], |r| {
                    (0..n)
                        .map(|i| r.get::<_, rusqlite::types::Value>(i).map(|v| format!("{v:?}")))
                        .collect::<Result<Vec<_>, _>>()
                })
                .map_err(sql_err)?;
            for row in rows {
                out.push_str(&table);
                out.push('|');
                out.push_str(&row.map_err(sql_err)?.join("|"));
                out.push('\n');
            }
        }
        Ok(out)
    }
}

/// Checkpoints a database's WAL from a thread of its own, so that no request pays for it.
pub struct Checkpointer {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts checkpointing `path` every `interval` until dropped. Errors are reported on stderr and
    /// retried at the next interval (a busy database is normal).
    pub fn start(path: &Path, interval: Duration) -> Result<Checkpointer, SqlError> {
        use std::sync::atomic::{AtomicBool, Ordering};
        let backend = SqliteDb::open_with(
            path,
            SqliteOptions {
                auto_checkpoint: false,
                ..SqliteOptions::default()
            },
        )?;
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("quota-checkpoint".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    if let Err(e) = backend.checkpoint() {
                        eprintln!("quota: WAL checkpoint failed (will retry): {e}");
                    }
                    std::thread::park_timeout(interval);
                }
                // A last checkpoint on the way out keeps the WAL short for the next start.
                let _ = backend.checkpoint();
            })
            .map_err(|e| SqlError::Other(format!("starting the checkpointer: {e}")))?;
        Ok(Checkpointer {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}
