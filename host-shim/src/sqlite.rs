//! The SQLite backend: an embedded file, WAL, `synchronous=FULL` by default, a versioned schema with
//! migrations, and one prepared statement per row operation.

use std::path::Path;
use std::time::Duration;

use quota_core::milli::Milli;
use quota_core::store::{
    Change, NewSession, RefreshRun, Session, SessionStatus, Store, Transaction, TransactionType, UserRecord,
};
use quota_core::{StoreError, Timestamp};
use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::backend::Backend;
use crate::host_tables::{
    scopes_column, scopes_from_column, HostTables, IdempotencyKey, IdempotencyRecord, TokenRecord,
};

/// Page cache per connection, in KiB.
const cache_kib: i64 = 64 * 1024;

/// How long a writer waits for another process's write lock before failing.
const busy_timeout_ms: u64 = 10_000;

/// Schema migrations; `PRAGMA user_version` is the number applied. Append only.
const migrations: &[&str] = &[
    // 1: the initial schema. Rows of `transactions` and `sessions` are never deleted, so plain
    // INTEGER PRIMARY KEY ids are never reused (AUTOINCREMENT would only add a write per insert).
    "CREATE TABLE users (
        username TEXT PRIMARY KEY,
        balance INTEGER NOT NULL,
        unlimited INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
     ) WITHOUT ROWID;
     CREATE TABLE transactions (
        id INTEGER PRIMARY KEY,
        username TEXT NOT NULL,
        amount INTEGER NOT NULL,
        transaction_type TEXT NOT NULL,
        resource_type TEXT,
        description TEXT NOT NULL,
        balance_before INTEGER NOT NULL,
        balance_after INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        created_by TEXT
     );
     CREATE INDEX transactions_by_user ON transactions (username, created_at, id);
     CREATE TABLE sessions (
        id INTEGER PRIMARY KEY,
        username TEXT NOT NULL,
        server_name TEXT NOT NULL,
        resource_type TEXT NOT NULL,
        rate_milli INTEGER NOT NULL,
        runtime_minutes INTEGER NOT NULL,
        estimated_cost_milli INTEGER NOT NULL,
        start_time INTEGER NOT NULL,
        billable INTEGER NOT NULL,
        status TEXT NOT NULL,
        end_time INTEGER,
        duration_minutes INTEGER,
        cost INTEGER NOT NULL
     );
     CREATE INDEX sessions_active_by_user ON sessions (username) WHERE status = 'active';
     CREATE INDEX sessions_active_by_start ON sessions (start_time) WHERE status = 'active';
     CREATE INDEX sessions_by_user ON sessions (username, id);
     CREATE TABLE refresh_runs (
        run_id TEXT PRIMARY KEY,
        params TEXT NOT NULL,
        result TEXT NOT NULL,
        created_at INTEGER NOT NULL
     ) WITHOUT ROWID;",
    // 2: host tables: API tokens (hashes only) and Idempotency-Key replays.
    "CREATE TABLE api_tokens (
        hash TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        admin INTEGER NOT NULL,
        scopes TEXT NOT NULL,
        created_at INTEGER NOT NULL
     ) WITHOUT ROWID;
     CREATE TABLE idempotency (
        caller TEXT NOT NULL,
        method TEXT NOT NULL,
        path TEXT NOT NULL,
        key TEXT NOT NULL,
        body_hash TEXT NOT NULL,
        status INTEGER NOT NULL,
        body TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (caller, method, path, key)
     ) WITHOUT ROWID;
     CREATE INDEX idempotency_by_age ON idempotency (created_at);",
];

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
}

impl Default for SqliteOptions {
    fn default() -> SqliteOptions {
        SqliteOptions {
            durability: Durability::Full,
            auto_checkpoint: true,
        }
    }
}

/// What one checkpoint did: frames in the WAL, and frames copied into the database file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointStats {
    pub wal_frames: i64,
    pub checkpointed: i64,
}

pub struct SqliteBackend {
    conn: Connection,
}

fn db_err(e: rusqlite::Error) -> StoreError {
    StoreError(format!("sqlite: {e}"))
}

const session_columns: &str = "id, username, server_name, resource_type, rate_milli, runtime_minutes, \
     estimated_cost_milli, start_time, billable, status, end_time, duration_minutes, cost";
const transaction_columns: &str = "id, username, amount, transaction_type, resource_type, description, \
     balance_before, balance_after, created_at, created_by";

const update_user_sql: &str =
    "UPDATE users SET balance = ?2, unlimited = ?3, updated_at = ?4 WHERE username = ?1";

/// Most writes change an existing user: the UPDATE (one primary-key seek) comes first, and the row
/// is inserted only when there was none.
fn write_user(
    conn: &Connection,
    update: &mut rusqlite::CachedStatement<'_>,
    u: &UserRecord,
) -> Result<(), StoreError> {
    let row = params![u.username, u.balance, u.unlimited, u.updated_at.seconds()];
    let changed = update.execute(row).map_err(db_err)?;
    if changed == 0 {
        let mut insert = conn
            .prepare_cached(
                "INSERT INTO users (username, balance, unlimited, updated_at) VALUES (?1, ?2, ?3, ?4)",
            )
            .map_err(db_err)?;
        insert.execute(row).map_err(db_err)?;
    }
    Ok(())
}

fn user_row(r: &Row<'_>) -> rusqlite::Result<UserRecord> {
    Ok(UserRecord {
        username: r.get(0)?,
        balance: r.get(1)?,
        unlimited: r.get(2)?,
        updated_at: Timestamp(r.get(3)?),
    })
}

fn bad_value(col: usize, what: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(col, rusqlite::types::Type::Text, what.into())
}

fn transaction_row(r: &Row<'_>) -> rusqlite::Result<Transaction> {
    let kind: String = r.get(3)?;
    Ok(Transaction {
        id: r.get(0)?,
        username: r.get(1)?,
        amount: r.get(2)?,
        transaction_type: TransactionType::parse(&kind)
            .ok_or_else(|| bad_value(3, format!("unknown transaction type `{kind}`")))?,
        resource_type: r.get(4)?,
        description: r.get(5)?,
        balance_before: r.get(6)?,
        balance_after: r.get(7)?,
        created_at: Timestamp(r.get(8)?),
        created_by: r.get(9)?,
    })
}

fn session_row(r: &Row<'_>) -> rusqlite::Result<Session> {
    let status: String = r.get(9)?;
    Ok(Session {
        id: r.get(0)?,
        username: r.get(1)?,
        server_name: r.get(2)?,
        resource_type: r.get(3)?,
        rate: Milli(r.get(4)?),
        runtime_minutes: r.get(5)?,
        estimated_cost: Milli(r.get(6)?),
        start_time: Timestamp(r.get(7)?),
        billable: r.get(8)?,
        status: SessionStatus::parse(&status)
            .ok_or_else(|| bad_value(9, format!("unknown status `{status}`")))?,
        end_time: r.get::<_, Option<i64>>(10)?.map(Timestamp),
        duration_minutes: r.get(11)?,
        cost: r.get(12)?,
    })
}

impl SqliteBackend {
    /// Opens (creating if needed) and migrates the database file.
    pub fn open(path: &Path, durability: Durability) -> Result<SqliteBackend, StoreError> {
        Self::open_with(
            path,
            SqliteOptions {
                durability,
                ..SqliteOptions::default()
            },
        )
    }

    /// Opens with explicit options.
    pub fn open_with(path: &Path, options: SqliteOptions) -> Result<SqliteBackend, StoreError> {
        let conn = Connection::open(path).map_err(db_err)?;
        let backend = Self::setup(conn, options.durability)?;
        if !options.auto_checkpoint {
            backend
                .conn
                .pragma_update(None, "wal_autocheckpoint", 0)
                .map_err(db_err)?;
        }
        Ok(backend)
    }

    /// Copies committed WAL frames into the database file without waiting for readers or writers
    /// (`PASSIVE`): safe to run at any time from any connection.
    pub fn checkpoint(&self) -> Result<CheckpointStats, StoreError> {
        self.conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                Ok(CheckpointStats {
                    wal_frames: r.get(1)?,
                    checkpointed: r.get(2)?,
                })
            })
            .map_err(db_err)
    }

    /// A private in-memory database (tests).
    pub fn in_memory() -> Result<SqliteBackend, StoreError> {
        Self::setup(Connection::open_in_memory().map_err(db_err)?, Durability::Full)
    }

    fn setup(conn: Connection, durability: Durability) -> Result<SqliteBackend, StoreError> {
        conn.busy_timeout(Duration::from_millis(busy_timeout_ms))
            .map_err(db_err)?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(db_err)?;
        let sync = match durability {
            Durability::Full => "FULL",
            Durability::Normal => "NORMAL",
        };
        conn.pragma_update(None, "synchronous", sync).map_err(db_err)?;
        // A large refresh touches every user row and appends as many audit rows in one transaction;
        // with SQLite's default 2 MB cache those pages spill to the WAL before the commit.
        conn.pragma_update(None, "cache_size", -cache_kib)
            .map_err(db_err)?;
        conn.set_prepared_statement_cache_capacity(64);
        let mut backend = SqliteBackend { conn };
        backend.migrate()?;
        Ok(backend)
    }

    /// The schema version of this file.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(db_err)
    }

    /// Applies the migrations this file has not seen, in one transaction (several processes may
    /// start at once: the write lock makes one of them do it).
    fn migrate(&mut self) -> Result<(), StoreError> {
        self.conn.execute_batch("BEGIN IMMEDIATE").map_err(db_err)?;
        let result = (|| {
            let current = usize::try_from(self.schema_version()?).unwrap_or(usize::MAX);
            if current > migrations.len() {
                return Err(StoreError(format!(
                    "the database has schema version {current}, newer than this program's {}",
                    migrations.len()
                )));
            }
            for (i, sql) in migrations.iter().enumerate().skip(current) {
                self.conn.execute_batch(sql).map_err(db_err)?;
                self.conn
                    .pragma_update(None, "user_version", i64::try_from(i + 1).unwrap_or(i64::MAX))
                    .map_err(db_err)?;
            }
            Ok(())
        })();
        match result {
            Ok(()) => self.conn.execute_batch("COMMIT").map_err(db_err),
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// The connection, for tools and tests.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }
}

impl Backend for SqliteBackend {
    fn begin(&mut self) -> Result<(), StoreError> {
        self.conn.execute_batch("BEGIN IMMEDIATE").map_err(db_err)
    }

    fn begin_read(&mut self) -> Result<(), StoreError> {
        self.conn.execute_batch("BEGIN DEFERRED").map_err(db_err)
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        self.conn.execute_batch("COMMIT").map_err(db_err)
    }

    fn rollback(&mut self) -> Result<(), StoreError> {
        if self.conn.is_autocommit() {
            return Ok(());
        }
        self.conn.execute_batch("ROLLBACK").map_err(db_err)
    }

    fn dump(&mut self) -> Result<String, StoreError> {
        let mut out = String::new();
        for (table, order) in [
            ("users", "username"),
            ("transactions", "id"),
            ("sessions", "id"),
            ("refresh_runs", "run_id"),
            ("api_tokens", "hash"),
            ("idempotency", "caller, method, path, key"),
        ] {
            let mut stmt = self
                .conn
                .prepare(&format!("SELECT * FROM {table} ORDER BY {order}"))
                .map_err(db_err)?;
            let n = stmt.column_count();
            let rows = stmt
                .query_map([], |r| {
                    (0..n)
                        .map(|i| r.get::<_, rusqlite::types::Value>(i).map(|v| format!("{v:?}")))
                        .collect::<Result<Vec<_>, _>>()
                })
                .map_err(db_err)?;
            for row in rows {
                out.push_str(table);
                out.push('|');
                out.push_str(&row.map_err(db_err)?.join("|"));
                out.push('\n');
            }
        }
        Ok(out)
    }
}

impl HostTables for SqliteBackend {
    fn put_token(&mut self, t: &TokenRecord) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT INTO api_tokens (hash, name, admin, scopes, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    t.hash,
                    t.name,
                    t.admin,
                    scopes_column(&t.scopes),
                    t.created_at.seconds()
                ])
            })
            .map(|_| ())
            .map_err(db_err)
    }

    fn find_token(&mut self, hash: &str) -> Result<Option<TokenRecord>, StoreError> {
        self.conn
            .prepare_cached("SELECT hash, name, admin, scopes, created_at FROM api_tokens WHERE hash = ?1")
            .and_then(|mut st| {
                st.query_row([hash], |r| {
                    Ok(TokenRecord {
                        hash: r.get(0)?,
                        name: r.get(1)?,
                        admin: r.get(2)?,
                        scopes: scopes_from_column(&r.get::<_, String>(3)?),
                        created_at: Timestamp(r.get(4)?),
                    })
                })
                .optional()
            })
            .map_err(db_err)
    }

    fn get_idempotent(&mut self, k: &IdempotencyKey) -> Result<Option<IdempotencyRecord>, StoreError> {
        self.conn
            .prepare_cached(
                "SELECT body_hash, status, body, created_at FROM idempotency \
                 WHERE caller = ?1 AND method = ?2 AND path = ?3 AND key = ?4",
            )
            .and_then(|mut st| {
                st.query_row(params![k.caller, k.method, k.path, k.key], |r| {
                    Ok(IdempotencyRecord {
                        body_hash: r.get(0)?,
                        status: r.get(1)?,
                        body: r.get(2)?,
                        created_at: Timestamp(r.get(3)?),
                    })
                })
                .optional()
            })
            .map_err(db_err)
    }

    fn put_idempotent(&mut self, k: &IdempotencyKey, r: &IdempotencyRecord) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT OR REPLACE INTO idempotency \
                 (caller, method, path, key, body_hash, status, body, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    k.caller,
                    k.method,
                    k.path,
                    k.key,
                    r.body_hash,
                    r.status,
                    r.body,
                    r.created_at.seconds()
                ])
            })
            .map(|_| ())
            .map_err(db_err)
    }

    fn purge_idempotent(&mut self, before: Timestamp) -> Result<u64, StoreError> {
        self.conn
            .execute(
                "DELETE FROM idempotency WHERE created_at < ?1",
                [before.seconds()],
            )
            .map(|n| n as u64)
            .map_err(db_err)
    }
}

impl Store for SqliteBackend {
    fn get_user(&mut self, username: &str) -> Result<Option<UserRecord>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached("SELECT username, balance, unlimited, updated_at FROM users WHERE username = ?1")
            .map_err(db_err)?;
        st.query_row([username], user_row).optional().map_err(db_err)
    }

    fn put_user(&mut self, u: &UserRecord) -> Result<(), StoreError> {
        let mut update = self.conn.prepare_cached(update_user_sql).map_err(db_err)?;
        write_user(&self.conn, &mut update, u)
    }

    fn scan_users(&mut self, after: Option<&str>, limit: usize) -> Result<Vec<UserRecord>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        // Two statements, not `?1 IS NULL OR username > ?1`: the OR makes SQLite scan from the
        // first row for every page instead of seeking the primary key.
        let rows = match after {
            Some(after) => {
                let mut st = self
                    .conn
                    .prepare_cached(
                        "SELECT username, balance, unlimited, updated_at FROM users
                         WHERE username > ?1 ORDER BY username LIMIT ?2",
                    )
                    .map_err(db_err)?;
                let rows = st.query_map(params![after, limit], user_row).map_err(db_err)?;
                rows.collect::<Result<_, _>>()
            }
            None => {
                let mut st = self
                    .conn
                    .prepare_cached(
                        "SELECT username, balance, unlimited, updated_at FROM users ORDER BY username LIMIT ?1",
                    )
                    .map_err(db_err)?;
                let rows = st.query_map(params![limit], user_row).map_err(db_err)?;
                rows.collect::<Result<_, _>>()
            }
        };
        rows.map_err(db_err)
    }

    fn record_changes(&mut self, changes: &[Change]) -> Result<(), StoreError> {
        // Both statements are looked up once per call, not once per row.
        let mut update = self.conn.prepare_cached(update_user_sql).map_err(db_err)?;
        let mut insert = self
            .conn
            .prepare_cached(
                "INSERT INTO transactions (username, amount, transaction_type, resource_type, description,
                   balance_before, balance_after, created_at, created_by)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )
            .map_err(db_err)?;
        for c in changes {
            write_user(&self.conn, &mut update, &c.user)?;
            let t = &c.entry;
            insert
                .execute(params![
                    t.username,
                    t.amount,
                    t.transaction_type.as_str(),
                    t.resource_type,
                    t.description,
                    t.balance_before,
                    t.balance_after,
                    t.created_at.seconds(),
                    t.created_by
                ])
                .map_err(db_err)?;
        }
        Ok(())
    }

    fn recent_transactions(&mut self, username: &str, limit: usize) -> Result<Vec<Transaction>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT {transaction_columns} FROM transactions WHERE username = ?1
                 ORDER BY created_at DESC, id DESC LIMIT ?2"
            ))
            .map_err(db_err)?;
        let rows = st
            .query_map(params![username, limit], transaction_row)
            .map_err(db_err)?;
        rows.collect::<Result<_, _>>().map_err(db_err)
    }

    fn scan_transactions(
        &mut self,
        username: Option<&str>,
        after_id: i64,
        limit: usize,
    ) -> Result<Vec<Transaction>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT {transaction_columns} FROM transactions
                 WHERE id > ?1 AND (?2 IS NULL OR username = ?2) ORDER BY id LIMIT ?3"
            ))
            .map_err(db_err)?;
        let rows = st
            .query_map(params![after_id, username, limit], transaction_row)
            .map_err(db_err)?;
        rows.collect::<Result<_, _>>().map_err(db_err)
    }

    fn insert_session(&mut self, s: &NewSession) -> Result<i64, StoreError> {
        let mut st = self
            .conn
            .prepare_cached(
                "INSERT INTO sessions (username, server_name, resource_type, rate_milli, runtime_minutes,
                   estimated_cost_milli, start_time, billable, status, cost)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'active', 0)",
            )
            .map_err(db_err)?;
        st.execute(params![
            s.username,
            s.server_name,
            s.resource_type,
            s.rate.raw(),
            s.runtime_minutes,
            s.estimated_cost.raw(),
            s.start_time.seconds(),
            s.billable
        ])
        .map_err(db_err)?;
        Ok(self.conn.last_insert_rowid())
    }

    fn get_session(&mut self, id: i64) -> Result<Option<Session>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached(&format!("SELECT {session_columns} FROM sessions WHERE id = ?1"))
            .map_err(db_err)?;
        st.query_row([id], session_row).optional().map_err(db_err)
    }

    fn update_session(&mut self, s: &Session) -> Result<(), StoreError> {
        let mut st = self
            .conn
            .prepare_cached(
                "UPDATE sessions SET status = ?2, end_time = ?3, duration_minutes = ?4, cost = ?5 WHERE id = ?1",
            )
            .map_err(db_err)?;
        let n = st
            .execute(params![
                s.id,
                s.status.as_str(),
                s.end_time.map(Timestamp::seconds),
                s.duration_minutes,
                s.cost
            ])
            .map_err(db_err)?;
        if n != 1 {
            return Err(StoreError(format!("session {} does not exist", s.id)));
        }
        Ok(())
    }

    fn active_sessions(&mut self, username: &str) -> Result<Vec<Session>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT {session_columns} FROM sessions WHERE username = ?1 AND status = 'active' ORDER BY id"
            ))
            .map_err(db_err)?;
        let rows = st.query_map([username], session_row).map_err(db_err)?;
        rows.collect::<Result<_, _>>().map_err(db_err)
    }

    fn stale_sessions(&mut self, cutoff: Timestamp) -> Result<Vec<Session>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT {session_columns} FROM sessions WHERE status = 'active' AND start_time < ?1 ORDER BY id"
            ))
            .map_err(db_err)?;
        let rows = st.query_map([cutoff.seconds()], session_row).map_err(db_err)?;
        rows.collect::<Result<_, _>>().map_err(db_err)
    }

    fn scan_sessions(
        &mut self,
        username: Option<&str>,
        status: Option<SessionStatus>,
        after_id: i64,
        limit: usize,
    ) -> Result<Vec<Session>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT {session_columns} FROM sessions WHERE id > ?1 AND (?2 IS NULL OR username = ?2)
                 AND (?3 IS NULL OR status = ?3) ORDER BY id LIMIT ?4"
            ))
            .map_err(db_err)?;
        let rows = st
            .query_map(
                params![after_id, username, status.map(SessionStatus::as_str), limit],
                session_row,
            )
            .map_err(db_err)?;
        rows.collect::<Result<_, _>>().map_err(db_err)
    }

    fn get_refresh_run(&mut self, run_id: &str) -> Result<Option<RefreshRun>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached("SELECT run_id, params, result, created_at FROM refresh_runs WHERE run_id = ?1")
            .map_err(db_err)?;
        st.query_row([run_id], |r| {
            Ok(RefreshRun {
                run_id: r.get(0)?,
                params: r.get(1)?,
                result: r.get(2)?,
                created_at: Timestamp(r.get(3)?),
            })
        })
        .optional()
        .map_err(db_err)
    }

    fn put_refresh_run(&mut self, run: &RefreshRun) -> Result<(), StoreError> {
        let mut st = self
            .conn
            .prepare_cached(
                "INSERT INTO refresh_runs (run_id, params, result, created_at) VALUES (?1, ?2, ?3, ?4)",
            )
            .map_err(db_err)?;
        st.execute(params![
            run.run_id,
            run.params,
            run.result,
            run.created_at.seconds()
        ])
        .map_err(db_err)?;
        Ok(())
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
    pub fn start(path: &Path, interval: Duration) -> Result<Checkpointer, StoreError> {
        use std::sync::atomic::{AtomicBool, Ordering};
        let backend = SqliteBackend::open_with(
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
            .map_err(|e| StoreError(format!("starting the checkpointer: {e}")))?;
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
