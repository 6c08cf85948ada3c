//! The SQLite schema (created at 8) and its migrations from 1 to 10, one step at a time (10 to 11,
//! the budgets' running holds, in `holds.rs` with PostgreSQL's; 11 to 12 in `both_dialects.rs`).

use super::both_dialects::Schema;

/// Table definitions of schema 3, shared by a fresh database and the migration from 1 and 2: each
/// an AUTOINCREMENT id (never reused), the username, then its own columns.
macro_rules! sqlite_user_rows_table {
    ($name:literal, $columns:literal) => {
        concat!(
            "CREATE TABLE ",
            $name,
            " (id INTEGER PRIMARY KEY AUTOINCREMENT, username TEXT NOT NULL, ",
            $columns,
            ")"
        )
    };
}
macro_rules! sqlite_transactions_table {
    ($name:literal) => {
        sqlite_user_rows_table!(
            $name,
            "amount INTEGER NOT NULL, transaction_type TEXT NOT NULL, resource_type TEXT,
             description TEXT NOT NULL, balance_before INTEGER NOT NULL, balance_after INTEGER NOT NULL,
             created_at INTEGER NOT NULL, created_by TEXT"
        )
    };
}
macro_rules! sqlite_sessions_table {
    ($name:literal) => {
        sqlite_user_rows_table!(
            $name,
            "server_name TEXT NOT NULL, resource_type TEXT NOT NULL, rate_milli INTEGER NOT NULL,
             runtime_minutes INTEGER NOT NULL, estimated_cost_milli INTEGER NOT NULL,
             start_time INTEGER NOT NULL, billable INTEGER NOT NULL, status TEXT NOT NULL,
             end_time INTEGER, duration_minutes INTEGER, cost INTEGER NOT NULL"
        )
    };
}

const SQLITE_TRANSACTION_INDEX: &str =
    "CREATE INDEX transactions_by_user ON transactions (username, created_at, id)";
const SQLITE_SESSION_INDEXES: [&str; 3] = [
    // Partial indexes: ending a session drops it from both, and they stay as small as the number of
    // running servers.
    "CREATE INDEX sessions_active_by_user ON sessions (username) WHERE status = 'active'",
    "CREATE INDEX sessions_active_by_start ON sessions (start_time) WHERE status = 'active'",
    "CREATE INDEX sessions_by_user ON sessions (username, id)",
];

/// Schema 4's additions: each user's groups as the host reported them (the names joined by
/// newlines, sorted), and the same as an index of members by group. (IF NOT EXISTS: a file whose
/// version was set back by hand migrates again.)
const SQLITE_MEMBERSHIPS_TABLES: [&str; 2] = [
    "CREATE TABLE IF NOT EXISTS memberships (
        username TEXT PRIMARY KEY,
        group_names TEXT NOT NULL,
        since INTEGER NOT NULL
     ) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS group_members (
        group_name TEXT NOT NULL,
        username TEXT NOT NULL,
        PRIMARY KEY (group_name, username)
     ) WITHOUT ROWID",
];

/// Schema 5's additions: the running usage sums (see `quota_core::usage`), by (day, resource
/// type) for the reports by day and resource, and by (user, day, resource type) for the report by
/// user and a user's own chart.
const SQLITE_USAGE_TABLES: [&str; 3] = [
    "CREATE TABLE IF NOT EXISTS usage_days (
        day INTEGER NOT NULL,
        resource_type TEXT NOT NULL,
        credits INTEGER NOT NULL,
        minutes INTEGER NOT NULL,
        sessions INTEGER NOT NULL,
        PRIMARY KEY (day, resource_type)
     ) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS user_usage_days (
        username TEXT NOT NULL,
        day INTEGER NOT NULL,
        resource_type TEXT NOT NULL,
        credits INTEGER NOT NULL,
        minutes INTEGER NOT NULL,
        sessions INTEGER NOT NULL,
        PRIMARY KEY (username, day, resource_type)
     ) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS user_usage_days_by_day ON user_usage_days (day)",
];

/// Schema 8: the day totals (`usage_days`) kept from the sums by user by two triggers, so a
/// session's end writes both sums in one statement, the upsert into `user_usage_days` (issue 36).
/// An upsert that updates fires the UPDATE trigger, which adds the difference.
const SQLITE_USAGE_TRIGGERS: [&str; 2] = [
    "CREATE TRIGGER IF NOT EXISTS usage_days_added AFTER INSERT ON user_usage_days BEGIN
     INSERT INTO usage_days (day, resource_type, credits, minutes, sessions)
     VALUES (NEW.day, NEW.resource_type, NEW.credits, NEW.minutes, NEW.sessions)
     ON CONFLICT (day, resource_type) DO UPDATE SET credits = credits + excluded.credits,
     minutes = minutes + excluded.minutes, sessions = sessions + excluded.sessions;
     END",
    "CREATE TRIGGER IF NOT EXISTS usage_days_changed AFTER UPDATE ON user_usage_days BEGIN
     INSERT INTO usage_days (day, resource_type, credits, minutes, sessions)
     VALUES (NEW.day, NEW.resource_type, NEW.credits - OLD.credits, NEW.minutes - OLD.minutes,
     NEW.sessions - OLD.sessions)
     ON CONFLICT (day, resource_type) DO UPDATE SET credits = credits + excluded.credits,
     minutes = minutes + excluded.minutes, sessions = sessions + excluded.sessions;
     END",
];

/// Schema 7 to 8: the triggers.
const SQLITE_FROM_7: &[&str] = &[
    SQLITE_USAGE_TRIGGERS[0],
    SQLITE_USAGE_TRIGGERS[1],
    "PRAGMA user_version = 8",
];

/// Schema 6's addition: dated grants (credit that lapses), each an account's (a user's, `budget`
/// empty, or a budget's, `username` empty). The partial indexes hold only grants with credit left.
const SQLITE_GRANTS_TABLES: [&str; 3] = [
    "CREATE TABLE IF NOT EXISTS grants (
        grant_id INTEGER PRIMARY KEY AUTOINCREMENT,
        username TEXT NOT NULL,
        budget TEXT NOT NULL,
        amount INTEGER NOT NULL,
        remaining INTEGER NOT NULL,
        granted_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
     )",
    "CREATE INDEX IF NOT EXISTS grants_held ON grants (username, budget) WHERE remaining > 0",
    "CREATE INDEX IF NOT EXISTS grants_due ON grants (expires_at) WHERE remaining > 0",
];

/// Schema 6's budgets: each budget's row (its balance; its definition when made over REST), the
/// budget and grant expiry of a transaction and the budget of a session (null: personal), and the
/// budgets' running usage sums by member.
const SQLITE_BUDGET_TABLES: [&str; 8] = [
    "CREATE TABLE IF NOT EXISTS budgets (
        name TEXT PRIMARY KEY,
        balance INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        definition TEXT
     ) WITHOUT ROWID",
    "ALTER TABLE transactions ADD COLUMN budget TEXT",
    "ALTER TABLE transactions ADD COLUMN expires_at INTEGER",
    "ALTER TABLE sessions ADD COLUMN budget TEXT",
    "CREATE INDEX IF NOT EXISTS transactions_by_budget ON transactions (budget, created_at, id)
     WHERE budget IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS sessions_active_by_budget ON sessions (budget)
     WHERE status = 'active' AND budget IS NOT NULL",
    // A member's month on a budget (the gate's limit check of schemas 6 to 10) read only that
    // member's rows; schema 12 drops it (`both_dialects::FROM_11`).
    "CREATE INDEX IF NOT EXISTS transactions_by_budget_member ON transactions (budget, username, created_at)
     WHERE budget IS NOT NULL",
    "CREATE TABLE IF NOT EXISTS budget_usage_days (
        budget TEXT NOT NULL,
        username TEXT NOT NULL,
        day INTEGER NOT NULL,
        resource_type TEXT NOT NULL,
        credits INTEGER NOT NULL,
        minutes INTEGER NOT NULL,
        sessions INTEGER NOT NULL,
        PRIMARY KEY (budget, username, day, resource_type)
     ) WITHOUT ROWID",
];

/// Schema 6 in an empty database.
const SQLITE_CREATE: &[&str] = &[
    "CREATE TABLE users (
        username TEXT PRIMARY KEY,
        balance INTEGER NOT NULL,
        unlimited INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
     ) WITHOUT ROWID",
    sqlite_transactions_table!("transactions"),
    SQLITE_TRANSACTION_INDEX,
    sqlite_sessions_table!("sessions"),
    SQLITE_SESSION_INDEXES[0],
    SQLITE_SESSION_INDEXES[1],
    SQLITE_SESSION_INDEXES[2],
    "CREATE TABLE refresh_runs (
        run_id TEXT PRIMARY KEY,
        params TEXT NOT NULL,
        result TEXT NOT NULL,
        created_at INTEGER NOT NULL
     ) WITHOUT ROWID",
    SQLITE_MEMBERSHIPS_TABLES[0],
    SQLITE_MEMBERSHIPS_TABLES[1],
    SQLITE_USAGE_TABLES[0],
    SQLITE_USAGE_TABLES[1],
    SQLITE_USAGE_TABLES[2],
    SQLITE_GRANTS_TABLES[0],
    SQLITE_GRANTS_TABLES[1],
    SQLITE_GRANTS_TABLES[2],
    SQLITE_BUDGET_TABLES[0],
    SQLITE_BUDGET_TABLES[1],
    SQLITE_BUDGET_TABLES[2],
    SQLITE_BUDGET_TABLES[3],
    SQLITE_BUDGET_TABLES[4],
    SQLITE_BUDGET_TABLES[5],
    SQLITE_BUDGET_TABLES[6],
    SQLITE_BUDGET_TABLES[7],
    "PRAGMA user_version = 6",
];

/// Schema 5 to 6: the grants.
const SQLITE_FROM_5: &[&str] = &[
    SQLITE_GRANTS_TABLES[0],
    SQLITE_GRANTS_TABLES[1],
    SQLITE_GRANTS_TABLES[2],
    SQLITE_BUDGET_TABLES[0],
    SQLITE_BUDGET_TABLES[1],
    SQLITE_BUDGET_TABLES[2],
    SQLITE_BUDGET_TABLES[3],
    SQLITE_BUDGET_TABLES[4],
    SQLITE_BUDGET_TABLES[5],
    SQLITE_BUDGET_TABLES[6],
    SQLITE_BUDGET_TABLES[7],
    "PRAGMA user_version = 6",
];

/// Schema 4 to 5: the usage sums, rebuilt from the ledger.
const SQLITE_FROM_4: &[&str] = &usage_migration!(SQLITE_USAGE_TABLES, "SUM", "PRAGMA user_version = 5");

/// Schema 3 to 4: the membership tables.
const SQLITE_FROM_3: &[&str] = &[
    SQLITE_MEMBERSHIPS_TABLES[0],
    SQLITE_MEMBERSHIPS_TABLES[1],
    "PRAGMA user_version = 4",
];

/// Schemas 1 and 2 (quota-hub 0.1.0; 2 only added quota-hub's own tables, which stay as they are)
/// to 3: the id columns become AUTOINCREMENT, so an id is never reused even after the newest rows
/// are deleted by hand. The tables are rebuilt with every row and id; SQLite then starts each
/// sequence after the largest id copied.
const SQLITE_FROM_1_OR_2: &[&str] = &[
    sqlite_transactions_table!("transactions_v3"),
    concat!(
        "INSERT INTO transactions_v3 (",
        transaction_columns_v3!(),
        ") SELECT ",
        transaction_columns_v3!(),
        " FROM transactions ORDER BY id"
    ),
    "DROP TABLE transactions",
    "ALTER TABLE transactions_v3 RENAME TO transactions",
    SQLITE_TRANSACTION_INDEX,
    sqlite_sessions_table!("sessions_v3"),
    concat!(
        "INSERT INTO sessions_v3 (",
        session_columns_v3!(),
        ") SELECT ",
        session_columns_v3!(),
        " FROM sessions ORDER BY id"
    ),
    "DROP TABLE sessions",
    "ALTER TABLE sessions_v3 RENAME TO sessions",
    SQLITE_SESSION_INDEXES[0],
    SQLITE_SESSION_INDEXES[1],
    SQLITE_SESSION_INDEXES[2],
    "PRAGMA user_version = 3",
];

/// Schema 6 to 7: events, warnings and webhooks' delivery state.
const SQLITE_FROM_6: &[&str] = &[
    // No AUTOINCREMENT: the purge keeps the newest event, so ids never go back.
    "CREATE TABLE IF NOT EXISTS events (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL,
            at INTEGER NOT NULL,
            username TEXT,
            budget TEXT,
            data TEXT NOT NULL
         )",
    "CREATE INDEX IF NOT EXISTS events_by_user ON events (username, id) WHERE username IS NOT NULL",
    // A budget's own events (no user): what its members read beside their own.
    "CREATE INDEX IF NOT EXISTS events_by_budget ON events (budget, id) WHERE username IS NULL",
    "ALTER TABLE sessions ADD COLUMN warn_at INTEGER",
    "ALTER TABLE sessions ADD COLUMN warned_mark INTEGER",
    "CREATE INDEX IF NOT EXISTS sessions_warn ON sessions (warn_at) WHERE status = 'active'",
    "ALTER TABLE grants ADD COLUMN warn_at INTEGER",
    "ALTER TABLE grants ADD COLUMN warned_mark INTEGER",
    "CREATE INDEX IF NOT EXISTS grants_warn ON grants (warn_at) WHERE remaining > 0",
    "CREATE TABLE IF NOT EXISTS webhooks (
            name TEXT PRIMARY KEY,
            after_id INTEGER NOT NULL,
            holder TEXT,
            held_until INTEGER,
            attempts INTEGER NOT NULL,
            retry_at INTEGER,
            last_error TEXT,
            last_delivered_id INTEGER
         ) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS webhook_failures (
            webhook TEXT NOT NULL,
            event_id INTEGER NOT NULL,
            error TEXT NOT NULL,
            failed_at INTEGER NOT NULL,
            PRIMARY KEY (webhook, event_id)
         ) WITHOUT ROWID",
    "PRAGMA user_version = 7",
];

/// Schema 8 to 9: credit requests (issue 48), a user's own account as the empty budget; one pending
/// request per user and account, held by a partial unique index.
const SQLITE_FROM_8: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS credit_requests (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        username TEXT NOT NULL,
        budget TEXT NOT NULL,
        amount INTEGER NOT NULL,
        reason TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        decided_at INTEGER,
        decided_by TEXT,
        granted INTEGER,
        expires_at INTEGER,
        note TEXT
     )",
    "CREATE UNIQUE INDEX IF NOT EXISTS credit_requests_pending ON credit_requests (username, budget)
     WHERE status = 'pending'",
    "CREATE INDEX IF NOT EXISTS credit_requests_by_user ON credit_requests (username, id)",
    "PRAGMA user_version = 9",
];

/// Schema 9 to 10: the schema's own record (see `Schema`): the version in `quota_schema`, the floor
/// left at 9 in `user_version`, so the engines of schema 9 (the commits before it) keep writing it.
const SQLITE_FROM_9: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS quota_schema (
        version INTEGER PRIMARY KEY,
        floor INTEGER NOT NULL
     )",
    "INSERT INTO quota_schema (version, floor) VALUES (10, 9) ON CONFLICT (version) DO NOTHING",
];

pub const SQLITE: Schema = Schema {
    current_version: 12,
    migration_begins: None,
    read_version: "PRAGMA user_version",
    has_versions: "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'quota_schema'",
    read_versions: "SELECT COALESCE(MAX(version), 0) FROM quota_schema",
    migrations: &[
        (0, SQLITE_CREATE),
        (1, SQLITE_FROM_1_OR_2),
        (2, SQLITE_FROM_1_OR_2),
        (3, SQLITE_FROM_3),
        (4, SQLITE_FROM_4),
        (5, SQLITE_FROM_5),
        (6, SQLITE_FROM_6),
        (7, SQLITE_FROM_7),
        (8, SQLITE_FROM_8),
        (9, SQLITE_FROM_9),
        (10, super::holds::SQLITE_FROM_10),
        (11, super::both_dialects::FROM_11),
        (12, &[]),
    ],
};
