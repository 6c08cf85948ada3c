//! SQLite: schema 7's events, warnings and webhooks' delivery state, and their statements.

use super::statements::Feed;

pub const sqlite_feed: Feed = Feed {
    migration: &[
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
    ],
    // One writer at a time already: ids follow commit order.
    lock_events: None,
    insert_event: "INSERT INTO events (kind, at, username, budget, data) VALUES (?1, ?2, ?3, ?4, ?5)",
    events_admin: concat!(
        "SELECT ",
        event_columns!(),
        " FROM events WHERE id > ?1 AND (?2 IS NULL OR kind = ?2) AND (?3 IS NULL OR username = ?3)
         AND (?4 IS NULL OR budget = ?4) ORDER BY id LIMIT ?5"
    ),
    events_mine: concat!(
        "SELECT ",
        event_columns!(),
        " FROM events WHERE id > ?1 AND username = ?2
         UNION ALL SELECT ",
        event_columns!(),
        " FROM events WHERE id > ?1 AND username IS NULL AND budget IN (SELECT value FROM json_each(?3))
         ORDER BY id LIMIT ?4"
    ),
    events_kinds: concat!(
        "SELECT ",
        event_columns!(),
        " FROM events WHERE id > ?1 AND kind IN (SELECT value FROM json_each(?2)) ORDER BY id LIMIT ?3"
    ),
    count_events: "SELECT COUNT(*) FROM events WHERE id > ?1 AND kind IN (SELECT value FROM json_each(?2))",
    last_event_id: "SELECT COALESCE(MAX(id), 0) FROM events",
    // Among the oldest ids only (ids follow time: an index on `at` would cost every insert), and
    // never the newest: without AUTOINCREMENT (its sequence row costs every insert) the next id is
    // the largest one plus one, so the largest stays and ids never go back.
    purge_events: "DELETE FROM events WHERE id IN (SELECT id FROM events ORDER BY id LIMIT ?2) AND at < ?1
         AND id < (SELECT MAX(id) FROM events)",
    purge_webhook_failures: "DELETE FROM webhook_failures WHERE failed_at < ?1",
    sessions_to_warn: concat!(
        "SELECT ",
        session_columns!(),
        ", warned_mark FROM sessions WHERE status = 'active' AND warn_at <= ?1 ORDER BY warn_at, id LIMIT ?2"
    ),
    set_session_warning: "UPDATE sessions SET warned_mark = ?2, warn_at = ?3 WHERE id = ?1",
    extend_session: "UPDATE sessions SET runtime_minutes = ?2, estimated_cost_milli = ?3, warn_at = ?4,
         warned_mark = ?5 WHERE id = ?1",
    session_warned_mark: "SELECT warned_mark FROM sessions WHERE id = ?1",
    arm_grant_warnings: "UPDATE grants SET warn_at = expires_at - ?1 WHERE warn_at IS NULL AND remaining > 0",
    grants_to_warn:
        "SELECT username, budget, grant_id, amount, remaining, granted_at, expires_at, warned_mark
         FROM grants WHERE remaining > 0 AND warn_at <= ?1 AND expires_at > ?1 ORDER BY warn_at, grant_id
         LIMIT ?2",
    set_grant_warning: "UPDATE grants SET warned_mark = ?2, warn_at = ?3 WHERE grant_id = ?1",
    get_webhook: concat!("SELECT ", webhook_columns!(), " FROM webhooks WHERE name = ?1"),
    // The write transaction already holds the database's one write lock.
    lock_webhook: concat!("SELECT ", webhook_columns!(), " FROM webhooks WHERE name = ?1"),
    put_webhook: concat!(
        "INSERT INTO webhooks (",
        webhook_columns!(),
        ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (name) DO UPDATE SET
         after_id = excluded.after_id, holder = excluded.holder, held_until = excluded.held_until,
         attempts = excluded.attempts, retry_at = excluded.retry_at, last_error = excluded.last_error,
         last_delivered_id = excluded.last_delivered_id"
    ),
    add_webhook_failure: "INSERT INTO webhook_failures (webhook, event_id, error, failed_at)
         VALUES (?1, ?2, ?3, ?4) ON CONFLICT (webhook, event_id) DO UPDATE SET
         error = excluded.error, failed_at = excluded.failed_at",
    count_webhook_failures: "SELECT COUNT(*) FROM webhook_failures WHERE webhook = ?1",
    drop_webhook_failures: "DELETE FROM webhook_failures WHERE webhook = ?1 AND event_id >= ?2",
};
