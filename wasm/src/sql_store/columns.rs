//! The engine's tables as the statements, the row readers and the hosting contract name them: the
//! column lists (macros, so statements can be built with `concat!`), the counts every row read
//! checks, and the list of tables tools copy or compare whole.

macro_rules! user_columns {
    () => {
        "username, balance, unlimited, updated_at"
    };
}
/// The columns of schema 3's ledger and sessions (what the migration from 1 and 2 copies).
macro_rules! transaction_columns_v3 {
    () => {
        "id, username, amount, transaction_type, resource_type, description, balance_before, \
         balance_after, created_at, created_by"
    };
}
macro_rules! session_columns_v3 {
    () => {
        "id, username, server_name, resource_type, rate_milli, runtime_minutes, estimated_cost_milli, \
         start_time, billable, status, end_time, duration_minutes, cost"
    };
}
/// Schema 6 added a transaction's budget and grant expiry, and a session's budget.
macro_rules! transaction_columns {
    () => {
        concat!(transaction_columns_v3!(), ", budget, expires_at")
    };
}
macro_rules! session_columns {
    () => {
        concat!(session_columns_v3!(), ", budget")
    };
}
macro_rules! budget_columns {
    () => {
        "name, balance, updated_at, definition"
    };
}
macro_rules! membership_columns {
    () => {
        "username, group_names, since"
    };
}
macro_rules! webhook_columns {
    () => {
        "name, after_id, holder, held_until, attempts, retry_at, last_error, last_delivered_id"
    };
}
macro_rules! event_columns {
    () => {
        "id, kind, at, username, budget, data"
    };
}

/// Column counts, checked on every row read.
pub const USER_COLUMN_COUNT: usize = 4;
pub const TRANSACTION_COLUMN_COUNT: usize = 12;
pub const SESSION_COLUMN_COUNT: usize = 14;
pub const BUDGET_COLUMN_COUNT: usize = 4;
pub const MEMBERSHIP_COLUMN_COUNT: usize = 3;
pub const EVENT_COLUMN_COUNT: usize = 6;
pub const WEBHOOK_COLUMN_COUNT: usize = 8;
/// The columns `account_grants` reads.
pub const GRANT_COLUMN_COUNT: usize = 5;

/// The engine's tables: (name, columns in copy order, the unique key rows are ordered by, the
/// column the database assigns, if one does). The `hosting` export hands them to tools that copy
/// or compare whole databases.
/// `budget_holds` is not one of them: its triggers keep it from `sessions` in every database, so a
/// copy of the sessions makes it (and `usage_days`, listed for comparing, is its trigger's too).
pub const TABLES: &[(&str, &str, &str, Option<&str>)] = &[
    ("users", user_columns!(), "username", None),
    (
        "grants",
        "grant_id, username, budget, amount, remaining, granted_at, expires_at, warn_at, warned_mark",
        "grant_id",
        Some("grant_id"),
    ),
    ("budgets", budget_columns!(), "name", None),
    ("transactions", transaction_columns!(), "id", Some("id")),
    (
        "sessions",
        concat!(session_columns!(), ", warn_at, warned_mark"),
        "id",
        Some("id"),
    ),
    (
        "refresh_runs",
        "run_id, params, result, created_at",
        "run_id",
        None,
    ),
    ("memberships", membership_columns!(), "username", None),
    (
        "group_members",
        "group_name, username",
        "group_name, username",
        None,
    ),
    (
        "usage_days",
        "day, resource_type, credits, minutes, sessions",
        "day, resource_type",
        None,
    ),
    (
        "user_usage_days",
        "username, day, resource_type, credits, minutes, sessions",
        "username, day, resource_type",
        None,
    ),
    (
        "budget_usage_days",
        "budget, username, day, resource_type, credits, minutes, sessions",
        "budget, username, day, resource_type",
        None,
    ),
    ("events", event_columns!(), "id", Some("id")),
    ("webhooks", webhook_columns!(), "name", None),
    (
        "webhook_failures",
        "webhook, event_id, error, failed_at",
        "webhook, event_id",
        None,
    ),
    (
        "credit_requests",
        "id, username, budget, amount, reason, status, created_at, decided_at, decided_by, granted, expires_at, note",
        "id",
        Some("id"),
    ),
];
