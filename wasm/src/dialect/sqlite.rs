//! The SQLite dialect: schema 5, its migrations from 1, 2, 3 and 4, and every statement.

use super::sqlite_feed::sqlite_feed;
use super::statements::Dialect;

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

const sqlite_transaction_index: &str =
    "CREATE INDEX transactions_by_user ON transactions (username, created_at, id)";
const sqlite_session_indexes: [&str; 3] = [
    // Partial indexes: ending a session drops it from both, and they stay as small as the number of
    // running servers.
    "CREATE INDEX sessions_active_by_user ON sessions (username) WHERE status = 'active'",
    "CREATE INDEX sessions_active_by_start ON sessions (start_time) WHERE status = 'active'",
    "CREATE INDEX sessions_by_user ON sessions (username, id)",
];

/// Schema 4's additions: each user's groups as the host reported them (the names joined by
/// newlines, sorted), and the same as an index of members by group. (IF NOT EXISTS: a file whose
/// version was set back by hand migrates again.)
const sqlite_memberships_tables: [&str; 2] = [
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
const sqlite_usage_tables: [&str; 3] = [
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
const sqlite_usage_triggers: [&str; 2] = [
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
const sqlite_from_7: &[&str] = &[
    sqlite_usage_triggers[0],
    sqlite_usage_triggers[1],
    "PRAGMA user_version = 8",
];

/// Schema 6's addition: dated grants (credit that lapses), each an account's (a user's, `budget`
/// empty, or a budget's, `username` empty). The partial indexes hold only grants with credit left.
const sqlite_grants_tables: [&str; 3] = [
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
const sqlite_budget_tables: [&str; 8] = [
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
    // A member's month on a budget (the gate's limit check) reads only that member's rows.
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
const sqlite_create: &[&str] = &[
    "CREATE TABLE users (
        username TEXT PRIMARY KEY,
        balance INTEGER NOT NULL,
        unlimited INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
     ) WITHOUT ROWID",
    sqlite_transactions_table!("transactions"),
    sqlite_transaction_index,
    sqlite_sessions_table!("sessions"),
    sqlite_session_indexes[0],
    sqlite_session_indexes[1],
    sqlite_session_indexes[2],
    "CREATE TABLE refresh_runs (
        run_id TEXT PRIMARY KEY,
        params TEXT NOT NULL,
        result TEXT NOT NULL,
        created_at INTEGER NOT NULL
     ) WITHOUT ROWID",
    sqlite_memberships_tables[0],
    sqlite_memberships_tables[1],
    sqlite_usage_tables[0],
    sqlite_usage_tables[1],
    sqlite_usage_tables[2],
    sqlite_grants_tables[0],
    sqlite_grants_tables[1],
    sqlite_grants_tables[2],
    sqlite_budget_tables[0],
    sqlite_budget_tables[1],
    sqlite_budget_tables[2],
    sqlite_budget_tables[3],
    sqlite_budget_tables[4],
    sqlite_budget_tables[5],
    sqlite_budget_tables[6],
    sqlite_budget_tables[7],
    "PRAGMA user_version = 6",
];

/// Schema 5 to 6: the grants.
const sqlite_from_5: &[&str] = &[
    sqlite_grants_tables[0],
    sqlite_grants_tables[1],
    sqlite_grants_tables[2],
    sqlite_budget_tables[0],
    sqlite_budget_tables[1],
    sqlite_budget_tables[2],
    sqlite_budget_tables[3],
    sqlite_budget_tables[4],
    sqlite_budget_tables[5],
    sqlite_budget_tables[6],
    sqlite_budget_tables[7],
    "PRAGMA user_version = 6",
];

/// Schema 4 to 5: the usage sums, rebuilt from the ledger.
const sqlite_from_4: &[&str] = &usage_migration!(sqlite_usage_tables, "SUM", "PRAGMA user_version = 5");

/// Schema 3 to 4: the membership tables.
const sqlite_from_3: &[&str] = &[
    sqlite_memberships_tables[0],
    sqlite_memberships_tables[1],
    "PRAGMA user_version = 4",
];

/// Schemas 1 and 2 (quota-hub 0.1.0; 2 only added quota-hub's own tables, which stay as they are)
/// to 3: the id columns become AUTOINCREMENT, so an id is never reused even after the newest rows
/// are deleted by hand. The tables are rebuilt with every row and id; SQLite then starts each
/// sequence after the largest id copied.
const sqlite_from_1_or_2: &[&str] = &[
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
    sqlite_transaction_index,
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
    sqlite_session_indexes[0],
    sqlite_session_indexes[1],
    sqlite_session_indexes[2],
    "PRAGMA user_version = 3",
];

pub const sqlite: Dialect = Dialect {
    current_version: 8,
    read_version: "PRAGMA user_version",
    migrations: &[
        (0, sqlite_create),
        (1, sqlite_from_1_or_2),
        (2, sqlite_from_1_or_2),
        (3, sqlite_from_3),
        (4, sqlite_from_4),
        (5, sqlite_from_5),
        (6, sqlite_feed.migration),
        (7, sqlite_from_7),
        (8, &[]),
    ],

    get_user: concat!("SELECT ", user_columns!(), " FROM users WHERE username = ?1"),
    // A user row is written as UPDATE, then INSERT for the rows that did not exist: nearly every write
    // changes an existing user, and SQLite's `INSERT ... ON CONFLICT DO UPDATE` tries the insert first
    // (measured slower on the spawn and billing paths).
    update_user: "UPDATE users SET balance = ?2, unlimited = ?3, updated_at = ?4 WHERE username = ?1",
    insert_missing_user: "INSERT OR IGNORE INTO users (username, balance, unlimited, updated_at)
         VALUES (?1, ?2, ?3, ?4)",
    // Two statements, not `?1 IS NULL OR username > ?1`: the OR makes SQLite scan from the first
    // row for every page instead of seeking the primary key.
    scan_users_first: concat!(
        "SELECT ",
        user_columns!(),
        " FROM users ORDER BY username LIMIT ?1"
    ),
    scan_users_after: concat!(
        "SELECT ",
        user_columns!(),
        " FROM users WHERE username > ?1 ORDER BY username LIMIT ?2"
    ),
    insert_transaction: "INSERT INTO transactions (username, amount, transaction_type, resource_type,
         description, balance_before, balance_after, created_at, created_by, budget, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    insert_transaction_block: concat!(
        "INSERT INTO transactions (username, amount, transaction_type, resource_type, description,
         balance_before, balance_after, created_at, created_by, budget, expires_at) VALUES ",
        sixteen_times!("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
    ),
    recent_transactions: concat!(
        "SELECT ",
        transaction_columns!(),
        " FROM transactions WHERE username = ?1 AND budget IS NULL
         ORDER BY created_at DESC, id DESC LIMIT ?2"
    ),
    scan_transactions: concat!(
        "SELECT ",
        transaction_columns!(),
        " FROM transactions WHERE id > ?1
         AND ((?6 IS NULL AND (?2 IS NULL OR (username = ?2 AND budget IS NULL)))
              OR (budget = ?6 AND (?2 IS NULL OR username = ?2)))
         AND created_at >= ?4 AND created_at < ?5 ORDER BY id LIMIT ?3"
    ),
    insert_session: "INSERT INTO sessions (username, server_name, resource_type, rate_milli,
         runtime_minutes, estimated_cost_milli, start_time, billable, status, cost, budget, warn_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'active', 0, ?9, ?10) RETURNING id",
    get_session: concat!("SELECT ", session_columns!(), " FROM sessions WHERE id = ?1"),
    update_session: "UPDATE sessions SET status = ?2, end_time = ?3, duration_minutes = ?4, cost = ?5
         WHERE id = ?1",
    // No ORDER BY (the store sorts the few rows): a statement whose plan depends on its bindings,
    // as these ORDER BY plans do, is re-prepared after every use once rusqlite clears the bindings
    // in its statement cache, and this is the spawn gate's read.
    active_sessions: concat!(
        "SELECT ",
        session_columns!(),
        " FROM sessions WHERE username = ?1 AND status = 'active'"
    ),
    // The sessions as a subquery: its columns are `s.*`, in the order the session reader expects.
    gate_state: concat!(
        "SELECT u.username, u.balance, u.unlimited, u.updated_at, m.username, m.group_names, m.since, s.*
         FROM (SELECT ?1 AS k) q
         LEFT JOIN users u ON u.username = q.k
         LEFT JOIN memberships m ON m.username = q.k
         LEFT JOIN (SELECT ",
        session_columns!(),
        " FROM sessions WHERE status = 'active') s ON s.username = q.k"
    ),
    session_and_user: concat!(
        "SELECT s.*, u.username, u.balance, u.unlimited, u.updated_at FROM (SELECT ",
        session_columns!(),
        " FROM sessions WHERE id = ?1) s LEFT JOIN users u ON u.username = s.username"
    ),
    stale_sessions: concat!(
        "SELECT ",
        session_columns!(),
        " FROM sessions WHERE status = 'active' AND start_time < ?1 ORDER BY id"
    ),
    scan_sessions: concat!(
        "SELECT ",
        session_columns!(),
        " FROM sessions WHERE id > ?1 AND (?2 IS NULL OR username = ?2)
         AND (?3 IS NULL OR status = ?3) ORDER BY id LIMIT ?4"
    ),
    get_refresh_run: "SELECT run_id, params, result, created_at FROM refresh_runs WHERE run_id = ?1",
    put_refresh_run: "INSERT INTO refresh_runs (run_id, params, result, created_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (run_id) DO UPDATE SET result = excluded.result",
    user_transactions: concat!(
        "SELECT ",
        transaction_columns!(),
        " FROM transactions WHERE username = ?1 AND budget IS NULL AND id < ?2 ORDER BY id DESC LIMIT ?3"
    ),
    user_sessions: concat!(
        "SELECT ",
        session_columns!(),
        " FROM sessions WHERE username = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3"
    ),
    get_membership: concat!(
        "SELECT ",
        membership_columns!(),
        " FROM memberships WHERE username = ?1"
    ),
    put_membership: "INSERT INTO memberships (username, group_names, since) VALUES (?1, ?2, ?3)
         ON CONFLICT (username) DO UPDATE SET group_names = excluded.group_names, since = excluded.since
         WHERE memberships.group_names <> excluded.group_names",
    clear_membership: "UPDATE memberships SET group_names = '', since = ?2
         WHERE username = ?1 AND group_names <> ''",
    // `WHERE true`: an upsert's SELECT needs a WHERE clause (SQLite's parsing ambiguity).
    put_memberships: "INSERT INTO memberships (username, group_names, since)
         SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), ?2 FROM json_each(?1) WHERE true
         ON CONFLICT (username) DO UPDATE SET group_names = excluded.group_names, since = excluded.since
         WHERE memberships.group_names <> excluded.group_names
         RETURNING username",
    clear_memberships: "UPDATE memberships SET group_names = '', since = ?2
         WHERE username IN (SELECT value FROM json_each(?1)) AND group_names <> '' RETURNING username",
    delete_group_members_of: "DELETE FROM group_members WHERE username IN (SELECT value FROM json_each(?1))",
    delete_group_members: "DELETE FROM group_members WHERE username = ?1",
    insert_group_member: "INSERT INTO group_members (group_name, username) VALUES (?1, ?2)",
    scan_memberships_first: concat!(
        "SELECT ",
        membership_columns!(),
        " FROM memberships ORDER BY username LIMIT ?1"
    ),
    scan_memberships_after: concat!(
        "SELECT ",
        membership_columns!(),
        " FROM memberships WHERE username > ?1 ORDER BY username LIMIT ?2"
    ),
    memberships_between: concat!(
        "SELECT ",
        membership_columns!(),
        " FROM memberships WHERE username >= ?1 AND username <= ?2 ORDER BY username"
    ),
    group_members_between: "SELECT username, group_name FROM group_members
         WHERE group_name IN (SELECT value FROM json_each(?1)) AND username >= ?2 AND username <= ?3
         ORDER BY username",
    scan_group: "SELECT username FROM group_members WHERE group_name = ?1 AND username > ?2
         ORDER BY username LIMIT ?3",
    group_counts: "SELECT group_name, COUNT(*) FROM group_members GROUP BY group_name ORDER BY group_name",
    record_user_usage_day: "INSERT INTO user_usage_days (username, day, resource_type, credits, minutes,
         sessions) VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (username, day, resource_type) DO UPDATE SET
         credits = credits + excluded.credits, minutes = minutes + excluded.minutes,
         sessions = sessions + excluded.sessions",
    usage_by_day: "SELECT day, resource_type, credits, minutes, sessions FROM usage_days
         WHERE day >= ?1 AND day <= ?2 ORDER BY day, resource_type",
    // The reports by user walk the users in name order and seek each one's days by the sums'
    // primary key (every user with sums has a user row): `CROSS JOIN` keeps SQLite from scanning
    // the range by day and sorting it by user instead, which read every user's days of the range
    // before the first row of a page (a page of 1,000 users of 10,000 over 30 days: 480 -> 7 ms;
    // the top users: 500 -> 58 ms; issue 36).
    usage_by_user_first: "SELECT u.username, SUM(d.credits), SUM(d.minutes), SUM(d.sessions)
         FROM users u CROSS JOIN user_usage_days d
         WHERE d.username = u.username AND d.day >= ?1 AND d.day <= ?2
         GROUP BY u.username ORDER BY u.username LIMIT ?3",
    usage_by_user_after: "SELECT u.username, SUM(d.credits), SUM(d.minutes), SUM(d.sessions)
         FROM users u CROSS JOIN user_usage_days d
         WHERE u.username > ?3 AND d.username = u.username AND d.day >= ?1 AND d.day <= ?2
         GROUP BY u.username ORDER BY u.username LIMIT ?4",
    usage_top_users: "SELECT u.username, SUM(d.credits) AS c, SUM(d.minutes) AS m, SUM(d.sessions)
         FROM users u CROSS JOIN user_usage_days d
         WHERE d.username = u.username AND d.day >= ?1 AND d.day <= ?2
         GROUP BY u.username ORDER BY c DESC, m DESC, u.username LIMIT ?3",
    user_usage: "SELECT day, resource_type, credits, minutes, sessions FROM user_usage_days
         WHERE username = ?1 AND day >= ?2 AND day <= ?3 ORDER BY day, resource_type",
    // SQLite runs the row-by-row statements in-process, without a round trip each.
    account_grants: "SELECT grant_id, amount, remaining, granted_at, expires_at FROM grants
         WHERE username = ?1 AND budget = ?2 AND remaining > 0 ORDER BY grant_id",
    insert_grant: "INSERT INTO grants (username, budget, amount, remaining, granted_at, expires_at)
         VALUES (?1, ?2, ?3, ?3, ?4, ?5) RETURNING grant_id",
    set_grant_remaining: "UPDATE grants SET remaining = ?2 WHERE grant_id = ?1",
    // Budgets' grants have an empty username: the held index finds them without the users' grants.
    due_budgets: "SELECT DISTINCT budget FROM grants WHERE username = '' AND budget <> '' AND remaining > 0
         AND expires_at <= ?1 ORDER BY budget",
    due_user_credit_between: "SELECT username, SUM(remaining) FROM grants WHERE budget = '' AND remaining > 0
         AND expires_at <= ?3 AND username >= ?1 AND username <= ?2 GROUP BY username ORDER BY username",
    due_user_grants: "SELECT username, grant_id, amount, remaining, granted_at, expires_at FROM grants
         WHERE budget = '' AND remaining > 0 AND expires_at <= ?1 ORDER BY expires_at, grant_id LIMIT ?2",
    users_named: concat!(
        "SELECT ",
        user_columns!(),
        " FROM users WHERE username IN (SELECT value FROM json_each(?1)) ORDER BY username"
    ),
    zero_grants: "UPDATE grants SET remaining = 0 WHERE grant_id IN (SELECT value FROM json_each(?1))",
    user_grants_between: "SELECT username, grant_id, amount, remaining, granted_at, expires_at FROM grants
         WHERE budget = '' AND remaining > 0 AND username >= ?1 AND username <= ?2
         ORDER BY username, grant_id",
    get_budget: concat!("SELECT ", budget_columns!(), " FROM budgets WHERE name = ?1"),
    // The write transaction already holds the database's one write lock.
    lock_budget: concat!("SELECT ", budget_columns!(), " FROM budgets WHERE name = ?1"),
    put_budget: "INSERT INTO budgets (name, balance, updated_at, definition) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (name) DO UPDATE SET balance = excluded.balance, updated_at = excluded.updated_at,
         definition = excluded.definition",
    delete_budget: "DELETE FROM budgets WHERE name = ?1",
    delete_budget_grants: "DELETE FROM grants WHERE username = '' AND budget = ?1",
    budgets: concat!("SELECT ", budget_columns!(), " FROM budgets ORDER BY name"),
    budget_sessions: concat!(
        "SELECT ",
        session_columns!(),
        " FROM sessions WHERE budget = ?1 AND status = 'active' ORDER BY id"
    ),
    // Two statements each, not `?2 IS NULL OR username = ?2`: the OR keeps SQLite from the
    // member's index (measured: the gate with a member limit 240x slower than without).
    budget_held: "SELECT COALESCE(SUM(estimated_cost_milli), 0) FROM sessions WHERE budget = ?1
         AND status = 'active' AND billable = 1",
    budget_member_held: "SELECT COALESCE(SUM(estimated_cost_milli), 0) FROM sessions WHERE username = ?2
         AND status = 'active' AND budget = ?1 AND billable = 1",
    budget_spent: "SELECT username, -SUM(amount) FROM transactions WHERE budget = ?1
         AND transaction_type = 'usage' AND created_at >= ?2 GROUP BY username ORDER BY username",
    budget_member_spent: "SELECT username, -SUM(amount) FROM transactions WHERE budget = ?1 AND username = ?3
         AND created_at >= ?2 AND transaction_type = 'usage' GROUP BY username",
    recent_budget_transactions: concat!(
        "SELECT ",
        transaction_columns!(),
        " FROM transactions WHERE budget = ?1 ORDER BY created_at DESC, id DESC LIMIT ?2"
    ),
    record_budget_usage_day: "INSERT INTO budget_usage_days (budget, username, day, resource_type,
         credits, minutes, sessions) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (budget, username, day, resource_type) DO UPDATE SET
         credits = credits + excluded.credits, minutes = minutes + excluded.minutes,
         sessions = sessions + excluded.sessions",
    budget_usage: "SELECT budget, username, day, resource_type, credits, minutes, sessions
         FROM budget_usage_days WHERE day >= ?1 AND day <= ?2 AND (?3 IS NULL OR budget = ?3)
         ORDER BY budget, username, day, resource_type",
    bulk: None,
    feed: &sqlite_feed,
};
