//! The `hosting` export: how a host must host this component, as data (wit/0.3.0, `hosting`).
//! Every number a host used to hard-code (waits, retries, deadline, chunk size) and every
//! statement it ran of its own (connection set-up, transactions, the migration lock) is here once:
//! the set-up statements come with the host's busy wait and durability already in them.

use crate::bindings::hosting::{
    Durability, ErrorCode, ErrorHandling, HostingContract, RetryPolicy, SetupPause, SetupStatement,
    StorageErrorKind as Kind, Table, TransactionStatements,
};
use crate::bindings::sql::Dialect;
use crate::sql_store::TABLES;
use quota_core::limits::{
    BUSY_WAIT_MS, CALL_DEADLINE_MS, MEMORY_LIMIT_BYTES, MIGRATION_DEADLINE_MS, REFRESH_CHUNK_USERS,
    SWEEP_INTERVAL_SECONDS, USERS_PAGE_MAX, WEBHOOK_TIMEOUT_SECONDS,
};

/// A set-up statement answered busy runs again after 1 ms, then 2, 4, ... up to 50 ms.
const SETUP_PAUSE: SetupPause = SetupPause {
    first_ms: 1,
    max_ms: 50,
};
/// The advisory lock key PostgreSQL hosts take around `migrate` ("quota" in ASCII).
const MIGRATION_LOCK_KEY: i64 = 0x71756f7461;

fn setup(sql: String, expect: &[&str], retry_while_busy: bool) -> SetupStatement {
    SetupStatement {
        sql,
        expect: expect.iter().map(|s| s.to_string()).collect(),
        retry_while_busy,
    }
}

fn code(code_prefix: &str, kind: Kind) -> ErrorCode {
    ErrorCode {
        code_prefix: code_prefix.into(),
        kind,
    }
}

fn handling(kind: Kind, retry: bool, http_status: u16, transient: bool) -> ErrorHandling {
    ErrorHandling {
        kind,
        retry,
        http_status,
        transient,
    }
}

impl crate::bindings::hosting::Guest for crate::exports::Component {
    fn contract(dialect: Dialect) -> HostingContract {
        contract(dialect)
    }

    fn connection_setup(dialect: Dialect, wait_ms: u32, durability: Durability) -> Vec<SetupStatement> {
        connection_setup(dialect, wait_ms, durability)
    }
}

/// `wait_ms`: the host's busy wait (the contract's `busy_wait_ms` unless the operator chose another).
fn connection_setup(dialect: Dialect, wait_ms: u32, durability: Durability) -> Vec<SetupStatement> {
    match dialect {
        Dialect::Sqlite => {
            let synchronous = match durability {
                Durability::Full => "FULL",
                Durability::Normal => "NORMAL",
            };
            vec![
                setup(format!("PRAGMA busy_timeout = {wait_ms}"), &[], false),
                // On a new file several processes starting at once all switch it; the switch needs
                // the file to itself and SQLite answers busy at once, without its busy handler.
                setup("PRAGMA journal_mode = WAL".into(), &["wal", "memory"], true),
                setup(format!("PRAGMA synchronous = {synchronous}"), &[], false),
                // A large refresh touches every user row and appends as many audit rows in one
                // transaction; with SQLite's default 2 MB cache those pages spill to the WAL early.
                setup("PRAGMA cache_size = -65536".into(), &[], false),
            ]
        }
        // PostgreSQL's durability is the server's (`synchronous_commit`), not a connection's.
        Dialect::Postgres => vec![setup(format!("SET lock_timeout = {wait_ms}"), &[], false)],
    }
}

fn contract(dialect: Dialect) -> HostingContract {
    let (transactions, error_codes) = match dialect {
        Dialect::Sqlite => (
            TransactionStatements {
                begin_write: "BEGIN IMMEDIATE".into(),
                begin_read: "BEGIN DEFERRED".into(),
                commit: "COMMIT".into(),
                rollback: "ROLLBACK".into(),
                savepoint: "SAVEPOINT quota_call".into(),
                release_savepoint: "RELEASE SAVEPOINT quota_call".into(),
                rollback_to_savepoint: "ROLLBACK TO SAVEPOINT quota_call".into(),
                migration_lock: None,
            },
            vec![
                code("SQLITE_BUSY", Kind::Busy),
                code("SQLITE_LOCKED", Kind::Busy),
                code("SQLITE_CONSTRAINT", Kind::Constraint),
            ],
        ),
        Dialect::Postgres => (
            TransactionStatements {
                begin_write: "BEGIN ISOLATION LEVEL SERIALIZABLE".into(),
                begin_read: "BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY".into(),
                commit: "COMMIT".into(),
                rollback: "ROLLBACK".into(),
                savepoint: "SAVEPOINT quota_call".into(),
                release_savepoint: "RELEASE SAVEPOINT quota_call".into(),
                rollback_to_savepoint: "ROLLBACK TO SAVEPOINT quota_call".into(),
                // A session lock, taken before the migration's transaction (and its snapshot).
                migration_lock: Some((
                    format!("SELECT pg_advisory_lock({MIGRATION_LOCK_KEY})"),
                    format!("SELECT pg_advisory_unlock({MIGRATION_LOCK_KEY})::int"),
                )),
            },
            vec![
                code("40001", Kind::Conflict), // serialization_failure
                code("40P01", Kind::Conflict), // deadlock_detected
                code("55P03", Kind::Busy),     // lock_not_available (lock_timeout)
                code("57014", Kind::Busy),     // query_canceled (statement_timeout)
                code("23", Kind::Constraint),  // integrity_constraint_violation
            ],
        ),
    };
    HostingContract {
        dialect,
        setup_pause: SETUP_PAUSE,
        transactions,
        busy_wait_ms: BUSY_WAIT_MS,
        retry: RetryPolicy {
            attempts: 30,
            backoff_base_us: 200,
            backoff_max_us: 100_000,
            jitter_percent: 50,
        },
        refresh_chunk_users: REFRESH_CHUNK_USERS,
        call_deadline_ms: CALL_DEADLINE_MS,
        migration_deadline_ms: MIGRATION_DEADLINE_MS,
        memory_limit_bytes: MEMORY_LIMIT_BYTES,
        sweep_interval_ms: SWEEP_INTERVAL_SECONDS * 1000,
        webhook_timeout_ms: WEBHOOK_TIMEOUT_SECONDS * 1000,
        users_page_max: u32::try_from(USERS_PAGE_MAX).unwrap_or(u32::MAX),
        error_codes,
        error_handling: vec![
            // The busy wait has already passed inside the database: answer at once.
            handling(Kind::Busy, false, 503, true),
            // The database rolled the transaction back: the call decides again from what is committed.
            handling(Kind::Conflict, true, 503, true),
            handling(Kind::Constraint, false, 500, false),
            handling(Kind::Other, false, 500, false),
        ],
        tables: TABLES
            .iter()
            .map(|(name, columns, key, identity)| Table {
                name: name.to_string(),
                columns: columns.split(", ").map(str::to_string).collect(),
                key: key.split(", ").map(str::to_string).collect(),
                identity: identity.map(str::to_string),
            })
            .collect(),
    }
}
