//! What both dialects' schemas share: the `Schema` type, the usage backfill of schema 5 and the
//! step from 11 to 12.

/// A dialect's schema: the version this engine writes and how to bring a database to it.
///
/// Two numbers describe a database (docs/upgrade.md, decisions.md "Schema floor"): its schema
/// version, and its floor, the oldest engine schema that may still write it. Up to schema 9 they
/// were one number, kept where every earlier engine reads its version (`PRAGMA user_version`, the
/// comment on `users`); that place now holds the floor, so an earlier engine at or above the floor
/// reads its own version there and runs, and one below it refuses. The version itself is the newest
/// row of `quota_schema` (schema 10 on), one row per migration with the floor it set.
pub struct Schema {
    /// The schema version this engine writes.
    pub current_version: u32,
    /// One row, one integer: the floor (before schema 10, the version; 0 for an empty database).
    pub read_version: &'static str,
    /// One row, one integer: 1 when `quota_schema` exists (schema 10 on), else 0.
    pub has_versions: &'static str,
    /// One row, one integer: the newest version recorded in `quota_schema` (0 for none).
    pub read_versions: &'static str,
    /// The migration's first statement, before any read (PostgreSQL: `READ COMMITTED`, so each
    /// step's statements see every write committed before its locks were taken: a step that
    /// creates triggers, then fills what they keep, counts the previous release's writes made
    /// meanwhile exactly once; under the host's `SERIALIZABLE` the fill read the snapshot of the
    /// migration's first read, and a write committed between that read and the triggers' lock was
    /// counted by neither; issue 59). SQLite's migration holds the write lock from its `BEGIN
    /// IMMEDIATE`: no writer runs beside it.
    pub migration_begins: Option<&'static str>,
    /// How to bring a database at each version it knows to a later one (`current_version`, or a
    /// step on the way there): (from version, statements; the last one records the new version).
    /// A version not listed is one this engine does not know.
    pub migrations: &'static [(u32, &'static [&'static str])],
}

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

/// Schema 11 to 12 in either dialect (issue 60), the contract step schema 11 announced: the
/// ledger's index of a member's rows on a budget (`transactions_by_budget_member`, schema 6) goes.
/// Since schema 11 a member's month on a budget reads the day sums, so nothing this engine or the
/// previous one (schema 11) runs reads it, and a budget session's end writes one index page less.
/// The floor stays 9: an engine of schema 9 or 10 (which checked a member's month on the ledger)
/// still runs correctly after a rollback, its check reading the budget's month of ledger rows
/// through `transactions_by_budget` instead of the member's (decisions.md, "The contract step of
/// schema 12").
pub const FROM_11: &[&str] = &[
    "DROP INDEX IF EXISTS transactions_by_budget_member",
    "INSERT INTO quota_schema (version, floor) VALUES (12, 9) ON CONFLICT (version) DO NOTHING",
];
