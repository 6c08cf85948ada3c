//! quota-hub's own tables: API tokens (stored hashed; their rows in `token_rows`) and
//! `Idempotency-Key` replays. The engine never
//! sees them; they live in the engine's database so that one transaction covers an engine call and
//! the replay record of its response. The engine owns its schema (its `migrate`); these two tables
//! are quota-hub's, created here if missing (files written by quota-hub 0.1.0 already have them).

use quota_core::Timestamp;
use quota_host::{Database, Dialect, HostError, SqlCell, Tx};

/// quota-hub's tables, created if missing (idempotent), as SQLite writes them; [`schema`] gives them
/// in the database's dialect.
const SQLITE_SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS api_tokens (
        hash TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        admin INTEGER NOT NULL,
        scopes TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        prefix TEXT,
        expires_at INTEGER,
        last_used INTEGER,
        imported INTEGER
     ) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS idempotency (
        caller TEXT NOT NULL,
        method TEXT NOT NULL,
        path TEXT NOT NULL,
        key TEXT NOT NULL,
        body_hash TEXT NOT NULL,
        status INTEGER NOT NULL,
        body TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (caller, method, path, key)
     ) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS idempotency_by_age ON idempotency (created_at)",
];

/// quota-hub's own tables, for `migrate-db` and whole-database comparisons: name, columns in
/// copy order, the unique key (the engine's own come from its hosting contract).
pub fn tables() -> Vec<quota_host::contract::Table> {
    let table = |name: &str, columns: &str, key: &str| quota_host::contract::Table {
        name: name.into(),
        columns: columns.split(", ").map(str::to_string).collect(),
        key: key.split(", ").map(str::to_string).collect(),
        identity: None,
    };
    vec![
        table(
            "api_tokens",
            "hash, name, admin, scopes, created_at, prefix, expires_at, last_used, imported",
            "hash",
        ),
        table(
            "idempotency",
            "caller, method, path, key, body_hash, status, body, created_at",
            "caller, method, path, key",
        ),
    ]
}

pub fn in_dialect(sql: &str, dialect: Dialect) -> std::borrow::Cow<'_, str> {
    match dialect {
        Dialect::Sqlite => sql.into(),
        Dialect::Postgres => sql.replace('?', "$").into(),
    }
}

/// What identifies a request for `Idempotency-Key`: the key is scoped to the token, method and path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdempotencyKey {
    /// The hash of the token that sent the request (the `caller` column; quota-hub 0.2 kept the
    /// caller's name there, so its rows match no request of this release).
    pub token: String,
    pub method: String,
    pub path: String,
    pub key: String,
}

/// The first completed response to a keyed request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdempotencyRecord {
    /// Hex SHA-256 of the request body: a repeat with another body is a conflict.
    pub body_hash: String,
    pub status: u16,
    pub body: String,
    pub created_at: Timestamp,
}

/// Where the statements run: inside an engine transaction, or on a bare connection.
pub trait Sql {
    fn dialect(&self) -> Dialect;
    /// Runs one statement written with SQLite's `?N` placeholders, in the database's dialect.
    fn run(&mut self, sql: &str, params: &[SqlCell]) -> Result<Vec<Vec<SqlCell>>, HostError>;
}

impl Sql for Tx<'_> {
    fn dialect(&self) -> Dialect {
        Tx::dialect(self)
    }

    fn run(&mut self, sql: &str, params: &[SqlCell]) -> Result<Vec<Vec<SqlCell>>, HostError> {
        let sql = in_dialect(sql, Sql::dialect(self));
        self.query(&sql, params)
    }
}

impl Sql for dyn Database + '_ {
    fn dialect(&self) -> Dialect {
        Database::dialect(self)
    }

    fn run(&mut self, sql: &str, params: &[SqlCell]) -> Result<Vec<Vec<SqlCell>>, HostError> {
        let sql = in_dialect(sql, Database::dialect(self));
        self.query(&sql, params).map_err(HostError::Storage)
    }
}

/// [`sqlite_schema`] in `dialect`: on PostgreSQL integers are `bigint` (as the engine's) and every
/// table has a row id of its own.
fn schema(dialect: Dialect) -> Vec<String> {
    let statements = SQLITE_SCHEMA.iter().map(|s| s.to_string());
    match dialect {
        Dialect::Sqlite => statements.collect(),
        Dialect::Postgres => statements
            .map(|s| s.replace(" INTEGER", " BIGINT").replace(") WITHOUT ROWID", ")"))
            .collect(),
    }
}

/// Creates quota-hub's tables if missing, in one transaction.
pub fn ensure_schema(db: &mut dyn Database) -> Result<(), HostError> {
    db.begin().map_err(HostError::Storage)?;
    let added = schema(Database::dialect(db))
        .iter()
        .try_for_each(|statement| db.run(statement, &[]).map(|_| ()))
        .and_then(|()| add_token_columns(db));
    if let Err(e) = added {
        let _ = db.rollback();
        return Err(e);
    }
    db.commit().map_err(HostError::Storage)
}

/// Columns added to `api_tokens` after quota-hub 0.1.0 (token list, expiry, revoke by prefix,
/// imported secrets), added to an older table; its tokens keep working, with no prefix, expiry or
/// last use, issued (not imported). (column, SQLite type, PostgreSQL type).
const TOKEN_COLUMNS_ADDED: [(&str, &str, &str); 4] = [
    ("prefix", "TEXT", "TEXT"),
    ("expires_at", "INTEGER", "BIGINT"),
    ("last_used", "INTEGER", "BIGINT"),
    ("imported", "INTEGER", "BIGINT"),
];

fn add_token_columns(db: &mut dyn Database) -> Result<(), HostError> {
    let dialect = Database::dialect(db);
    let present = match dialect {
        Dialect::Sqlite => db.run("SELECT name FROM pragma_table_info('api_tokens')", &[])?,
        Dialect::Postgres => db.run(
            "SELECT column_name::text FROM information_schema.columns
             WHERE table_name = 'api_tokens' AND table_schema = current_schema()",
            &[],
        )?,
    };
    let present: Vec<&str> = present.iter().filter_map(|r| r.first()?.as_text()).collect();
    for (column, sqlite_type, postgres_type) in TOKEN_COLUMNS_ADDED {
        if present.contains(&column) {
            continue;
        }
        // SQLite's write lock (BEGIN IMMEDIATE) serialises this; PostgreSQL's IF NOT EXISTS lets
        // two servers starting at once both succeed.
        let sql = match dialect {
            Dialect::Sqlite => format!("ALTER TABLE api_tokens ADD COLUMN {column} {sqlite_type}"),
            Dialect::Postgres => {
                format!("ALTER TABLE api_tokens ADD COLUMN IF NOT EXISTS {column} {postgres_type}")
            }
        };
        db.run(&sql, &[])?;
    }
    Ok(())
}

pub(crate) fn bad_row(what: &str) -> HostError {
    HostError::Storage(quota_host::SqlError::Other(format!(
        "{what}: unexpected row shape"
    )))
}

pub(crate) fn text(v: &SqlCell, what: &str) -> Result<String, HostError> {
    v.as_text().map(str::to_string).ok_or_else(|| bad_row(what))
}

pub(crate) fn int(v: &SqlCell, what: &str) -> Result<i64, HostError> {
    v.as_int().ok_or_else(|| bad_row(what))
}

fn key_params(k: &IdempotencyKey) -> Vec<SqlCell> {
    vec![
        k.token.as_str().into(),
        k.method.as_str().into(),
        k.path.as_str().into(),
        k.key.as_str().into(),
    ]
}

pub fn get_idempotent(
    db: &mut (impl Sql + ?Sized),
    k: &IdempotencyKey,
) -> Result<Option<IdempotencyRecord>, HostError> {
    let rows = db.run(
        "SELECT body_hash, status, body, created_at FROM idempotency
         WHERE caller = ?1 AND method = ?2 AND path = ?3 AND key = ?4",
        &key_params(k),
    )?;
    let Some(r) = rows.first() else {
        return Ok(None);
    };
    let [body_hash, status, body, created_at] = r.as_slice() else {
        return Err(bad_row("idempotency"));
    };
    Ok(Some(IdempotencyRecord {
        body_hash: text(body_hash, "idempotency")?,
        status: u16::try_from(int(status, "idempotency")?).map_err(|_| bad_row("idempotency"))?,
        body: text(body, "idempotency")?,
        created_at: Timestamp(int(created_at, "idempotency")?),
    }))
}

pub fn put_idempotent(
    db: &mut (impl Sql + ?Sized),
    k: &IdempotencyKey,
    r: &IdempotencyRecord,
) -> Result<(), HostError> {
    let mut p = key_params(k);
    p.extend([
        r.body_hash.as_str().into(),
        i64::from(r.status).into(),
        r.body.as_str().into(),
        r.created_at.seconds().into(),
    ]);
    // Both dialects read this upsert (SQLite 3.24+ and PostgreSQL).
    db.run(
        "INSERT INTO idempotency (caller, method, path, key, body_hash, status, body, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT (caller, method, path, key) DO UPDATE SET body_hash = excluded.body_hash,
         status = excluded.status, body = excluded.body, created_at = excluded.created_at",
        &p,
    )
    .map(|_| ())
}

/// Forgets replays recorded before `before`; returns how many.
pub fn purge_idempotent(db: &mut (impl Sql + ?Sized), before: Timestamp) -> Result<u64, HostError> {
    let rows = db.run(
        "DELETE FROM idempotency WHERE created_at < ?1 RETURNING 1",
        &[before.seconds().into()],
    )?;
    Ok(rows.len() as u64)
}
