//! What a dialect is: the statements the engine runs, the schema's tables and column counts,
//! and the macros the dialects build their statements with.

/// The statements of one dialect.
pub struct Dialect {
    /// The schema version this engine writes.
    pub current_version: u32,
    /// One row, one integer: the database's schema version (0 for an empty database).
    pub read_version: &'static str,
    /// How to bring a database at each version it knows to a later one (`current_version`, or a
    /// step on the way there): (from version, statements; the last one records the new version).
    /// A version not listed is one this engine does not know.
    pub migrations: &'static [(u32, &'static [&'static str])],

    pub get_user: &'static str,
    pub update_user: &'static str,
    /// Inserts a user row unless one exists (after `update_user` changed fewer rows than it was given).
    pub insert_missing_user: &'static str,
    pub scan_users_first: &'static str,
    pub scan_users_after: &'static str,
    pub insert_transaction: &'static str,
    /// `insert_transaction` for [`transaction_block_rows`] rows at once (parameters row after row):
    /// one statement execution, and one update of the id sequence, per block instead of per row.
    pub insert_transaction_block: &'static str,
    pub recent_transactions: &'static str,
    pub scan_transactions: &'static str,
    pub insert_session: &'static str,
    pub get_session: &'static str,
    pub update_session: &'static str,
    pub active_sessions: &'static str,
    /// The spawn gate's one read of `?1`: user columns, membership columns, then session columns,
    /// a row per active session (or one with the session columns null), each part null when absent.
    pub gate_state: &'static str,
    /// Session `?1` (session columns), then its user's (null when the user has no row).
    pub session_and_user: &'static str,
    pub stale_sessions: &'static str,
    pub scan_sessions: &'static str,
    pub get_refresh_run: &'static str,
    /// Inserts a refresh run, or replaces its result (a chunked run records its progress).
    pub put_refresh_run: &'static str,
    /// A user's transactions with `id < ?2`, newest first, at most `?3`.
    pub user_transactions: &'static str,
    /// A user's sessions with `id < ?2`, newest first, at most `?3`.
    pub user_sessions: &'static str,
    pub get_membership: &'static str,
    /// Inserts a user's groups (`?2`, the names joined by newlines), or replaces them when they
    /// differ: changes no row when they are the same.
    pub put_membership: &'static str,
    /// Empties a user's groups when they have any: changes no row otherwise.
    pub clear_membership: &'static str,
    /// A page of a snapshot at once (issue 36): `?1` a JSON array of `[username, names joined by
    /// newlines]`, `?2` the time; inserts or replaces only what differs and answers the usernames
    /// it changed.
    pub put_memberships: &'static str,
    /// Empties the groups of the usernames in `?1` (a JSON array) that have any; answers them.
    pub clear_memberships: &'static str,
    /// The index rows of the usernames in `?1` (a JSON array).
    pub delete_group_members_of: &'static str,
    /// The index of members by group, kept with `memberships` in the same transaction.
    pub delete_group_members: &'static str,
    pub insert_group_member: &'static str,
    pub scan_memberships_first: &'static str,
    pub scan_memberships_after: &'static str,
    /// The memberships of usernames from `?1` to `?2`, both included.
    pub memberships_between: &'static str,
    /// (username, group) of the users from `?2` to `?3` in one of the groups `?1` (a JSON list).
    pub group_members_between: &'static str,
    /// Members of group `?1` after username `?2`, at most `?3`.
    pub scan_group: &'static str,
    pub group_counts: &'static str,
    /// Adds to a user's day's sum of one resource type: (username, day, resource type, credits,
    /// minutes, sessions); the day's sum of all users (`usage_days`) follows by trigger.
    pub record_user_usage_day: &'static str,
    /// (day, resource type, credits, minutes, sessions) of the days `?1` to `?2`.
    pub usage_by_day: &'static str,
    /// (username, credits, minutes, sessions) of the users with usage in the days `?1` to `?2`, by
    /// username: at most `?3` (first page) or, after username `?3`, at most `?4`.
    pub usage_by_user_first: &'static str,
    pub usage_by_user_after: &'static str,
    /// The same, most credits (then minutes) first, at most `?3`.
    pub usage_top_users: &'static str,
    /// (day, resource type, credits, minutes, sessions) of user `?1` in the days `?2` to `?3`.
    pub user_usage: &'static str,
    /// (grant id, amount, remaining, granted at, expires at) of the account (`?1` username, `?2`
    /// budget, `''` for none) with credit left, by id.
    pub account_grants: &'static str,
    /// (username, budget, amount, granted at, expires at); answers the new grant's id.
    pub insert_grant: &'static str,
    /// (grant id, remaining).
    pub set_grant_remaining: &'static str,
    /// The budgets with a grant due by `?1`, by name.
    pub due_budgets: &'static str,
    /// (username, credit due) of users from `?1` to `?2` with personal grants due by `?3`.
    pub due_user_credit_between: &'static str,
    /// (username, grant id, amount, remaining, granted at, expires at) of up to `?2` personal
    /// grants due by `?1` with credit left, by expiry, then id (the due index's own order).
    pub due_user_grants: &'static str,
    /// The users named in `?1` (a JSON list of names).
    pub users_named: &'static str,
    /// Sets the remaining credit of the grants in `?1` (a JSON list of ids) to 0.
    pub zero_grants: &'static str,
    /// (username, grant id, amount, remaining, granted at, expires at) of the personal grants
    /// holding credit of the users from `?1` to `?2`.
    pub user_grants_between: &'static str,
    /// A budget's row by name.
    pub get_budget: &'static str,
    /// The same, locking the row until the transaction ends (a start charging the budget).
    pub lock_budget: &'static str,
    /// (name, balance, updated at, definition): inserts or replaces the row.
    pub put_budget: &'static str,
    pub delete_budget: &'static str,
    /// A deleted budget's grants go with it.
    pub delete_budget_grants: &'static str,
    /// Every budget row, by name.
    pub budgets: &'static str,
    /// The active sessions charging budget `?1`.
    pub budget_sessions: &'static str,
    /// One integer: what the billable active sessions charging `?1` hold.
    pub budget_held: &'static str,
    /// The same, only user `?2`'s.
    pub budget_member_held: &'static str,
    /// (username, credits) of budget `?1`'s usage since `?2`.
    pub budget_spent: &'static str,
    /// The same, only user `?3`'s.
    pub budget_member_spent: &'static str,
    /// Budget `?1`'s newest transactions, at most `?2`.
    pub recent_budget_transactions: &'static str,
    /// Adds to a budget's member's day's sum of one resource type: (budget, username, day,
    /// resource type, credits, minutes, sessions).
    pub record_budget_usage_day: &'static str,
    /// (budget, username, day, resource type, sums) in the days `?1` to `?2`, only budget `?3`'s
    /// when not null.
    pub budget_usage: &'static str,
    /// Set-based forms of the bulk writes, each taking all rows at once as one JSON text parameter
    /// (`[[...], ...]`, the rows `update_user` and `insert_transaction` take): one statement per
    /// page of a refresh instead of one per row. None: the row-by-row statements above.
    pub bulk: Option<Bulk>,
    /// Events, warnings and webhooks (schema 7).
    pub feed: &'static Feed,
}

/// The statements of events, warnings and webhooks' delivery state (schema 7).
pub struct Feed {
    /// Schema 6 to 7 (the last statement records version 7).
    pub migration: &'static [&'static str],
    /// Run before a call's first event is written: on a database several writers share, makes
    /// ids follow commit order (a webhook's cursor never passes an id still to be committed).
    pub lock_events: Option<&'static str>,
    /// (kind, at, username, budget, data).
    pub insert_event: &'static str,
    /// Events after id `?1`, of kind `?2`, user `?3`, budget `?4` (each when not null), at most `?5`.
    pub events_admin: &'static str,
    /// Events after id `?1` of user `?2`, or a budget's own in the JSON list `?3`, at most `?4`.
    pub events_mine: &'static str,
    /// Events after id `?1` of the kinds in the JSON list `?2`, at most `?3`.
    pub events_kinds: &'static str,
    /// One integer: how many events after id `?1` have a kind in the JSON list `?2`.
    pub count_events: &'static str,
    pub last_event_id: &'static str,
    /// Deletes the events written before `?1` among the `?2` oldest (by id).
    pub purge_events: &'static str,
    /// Failures recorded before `?1` go with their events.
    pub purge_webhook_failures: &'static str,
    /// The session columns and `warned_mark` of at most `?2` active sessions warned by `?1`.
    pub sessions_to_warn: &'static str,
    /// (id, warned mark, warn at).
    pub set_session_warning: &'static str,
    /// (id, runtime minutes, estimated cost, warn at, warned mark).
    pub extend_session: &'static str,
    pub session_warned_mark: &'static str,
    /// Gives grants with credit and no warning time one `?1` seconds before their expiry.
    pub arm_grant_warnings: &'static str,
    /// (username, budget, grant id, amount, remaining, granted at, expires at, warned mark) of at
    /// most `?2` grants with credit whose warning time came by `?1`, not yet expired.
    pub grants_to_warn: &'static str,
    /// (grant id, warned mark, warn at).
    pub set_grant_warning: &'static str,
    pub get_webhook: &'static str,
    pub lock_webhook: &'static str,
    /// (name, after id, holder, held until, attempts, retry at, last error, last delivered id).
    pub put_webhook: &'static str,
    /// (webhook, event id, error, failed at).
    pub add_webhook_failure: &'static str,
    pub count_webhook_failures: &'static str,
    /// Webhook `?1`'s failures of events from `?2` on.
    pub drop_webhook_failures: &'static str,
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

/// See [`Dialect::bulk`].
pub struct Bulk {
    pub update_users: &'static str,
    pub insert_missing_users: &'static str,
    /// Ids follow the order of the rows.
    pub insert_transactions: &'static str,
}

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

/// `$t` sixteen times, comma-separated ([`transaction_block_rows`]).
macro_rules! sixteen_times {
    ($t:literal) => {
        concat!(
            $t, ",", $t, ",", $t, ",", $t, ",", $t, ",", $t, ",", $t, ",", $t, ",", $t, ",", $t, ",", $t,
            ",", $t, ",", $t, ",", $t, ",", $t, ",", $t
        )
    };
}

/// Rows per `insert_transaction_block` (a refresh writes 1,000 audit rows per page; measured with
/// 100,000 rows: 16 per statement halves the time SQLite spends on them, more gains little).
pub const transaction_block_rows: usize = 16;

/// The engine's tables: (name, columns in copy order, the unique key rows are ordered by, the
/// column the database assigns, if one does). The
/// `hosting` export hands them to tools that copy or compare whole databases.
pub const tables: &[(&str, &str, &str, Option<&str>)] = &[
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
];

/// Column counts, checked on every row read.
pub const user_column_count: usize = 4;
pub const transaction_column_count: usize = 12;
pub const session_column_count: usize = 14;
pub const budget_column_count: usize = 4;
pub const membership_column_count: usize = 3;
pub const event_column_count: usize = 6;
pub const webhook_column_count: usize = 8;
/// The columns `account_grants` reads.
pub const grant_column_count: usize = 5;

/// Schema 5's running usage sums rebuilt from the ledger (the migration from 4, and again if a
/// file's version was set back by hand): the credits of the `usage` transactions on their day, the
/// minutes and count of completed sessions on the day they ended. `$sum` is a dialect's sum of
/// integers, `$end` the statement that records version 5.
macro_rules! usage_backfill {
    ($sum:literal, $end:literal) => {
        [
            "DELETE FROM user_usage_days",
            concat!(
                "INSERT INTO user_usage_days (username, day, resource_type, credits, minutes, sessions)
                 SELECT username, created_at / 86400, COALESCE(resource_type, ''), -",
                $sum,
                "(amount), 0, 0 FROM transactions WHERE transaction_type = 'usage'
                 GROUP BY username, created_at / 86400, COALESCE(resource_type, '')"
            ),
            concat!(
                "INSERT INTO user_usage_days (username, day, resource_type, credits, minutes, sessions)
                 SELECT username, end_time / 86400, resource_type, 0, ",
                $sum,
                "(duration_minutes), COUNT(*) FROM sessions
                 WHERE status = 'completed' AND end_time IS NOT NULL
                 GROUP BY username, end_time / 86400, resource_type
                 ON CONFLICT (username, day, resource_type) DO UPDATE SET
                 minutes = user_usage_days.minutes + excluded.minutes,
                 sessions = user_usage_days.sessions + excluded.sessions"
            ),
            // The day totals after the sums by user, from them: schema 8's triggers (present when a
            // file's version was set back by hand) have added to them meanwhile.
            "DELETE FROM usage_days",
            concat!(
                "INSERT INTO usage_days (day, resource_type, credits, minutes, sessions)
                 SELECT day, resource_type, ",
                $sum,
                "(credits), ",
                $sum,
                "(minutes), ",
                $sum,
                "(sessions) FROM user_usage_days GROUP BY day, resource_type"
            ),
            $end,
        ]
    };
}

/// Schema 4 to 5 in either dialect: the dialect's three usage tables, then the backfill.
macro_rules! usage_migration {
    ($tables:expr, $sum:literal, $end:literal) => {{
        let b = usage_backfill!($sum, $end);
        [
            $tables[0], $tables[1], $tables[2], b[0], b[1], b[2], b[3], b[4], b[5],
        ]
    }};
}
