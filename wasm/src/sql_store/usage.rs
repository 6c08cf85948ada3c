//! The usage sums over SQL: their statements and `UsageStore`.

use quota_core::store::{BudgetUsage, Usage, UsageKey, UsageStore};
use quota_core::StoreError;

use super::bridge::SqlStore;
use super::rows::{all, budget_usage, day_usage, limit, user_usage_row};
use super::sql::Sql;
use crate::sql_json::Params;

/// Adds to a user's day's sum of one resource type: (username, day, resource type, credits,
/// minutes, sessions); the day's sum of all users (`usage_days`) follows by trigger (schema 8).
const RECORD_USER_USAGE_DAY: Sql = same!(
    "INSERT INTO user_usage_days AS t (username, day, resource_type, credits,
         minutes, sessions) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (username, day, resource_type)
         DO UPDATE SET credits = t.credits + excluded.credits, minutes = t.minutes + excluded.minutes,
         sessions = t.sessions + excluded.sessions"
);
/// Adds to a budget's member's day's sum of one resource type: (budget, username, day, resource
/// type, credits, minutes, sessions).
const RECORD_BUDGET_USAGE_DAY: Sql = same!(
    "INSERT INTO budget_usage_days AS t (budget, username, day, resource_type,
         credits, minutes, sessions) VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (budget, username, day, resource_type) DO UPDATE SET
         credits = t.credits + excluded.credits, minutes = t.minutes + excluded.minutes,
         sessions = t.sessions + excluded.sessions"
);
/// (day, resource type, credits, minutes, sessions) of the days `$1` to `$2`.
const USAGE_BY_DAY: Sql = same!(
    "SELECT day, resource_type, credits, minutes, sessions FROM usage_days
         WHERE day >= $1 AND day <= $2 ORDER BY day, resource_type"
);
/// (username, credits, minutes, sessions) of the users with usage in the days `$1` to `$2`, by
/// username: at most `$3` (first page) or, after username `$3`, at most `$4`.
const USAGE_BY_USER_FIRST: Sql = each!(
    // The reports by user walk the users in name order and seek each one's days by the sums'
    // primary key (every user with sums has a user row): `CROSS JOIN` keeps SQLite from scanning
    // the range by day and sorting it by user instead, which read every user's days of the range
    // before the first row of a page (a page of 1,000 users of 10,000 over 30 days: 480 -> 7 ms;
    // the top users: 500 -> 58 ms; issue 36).
    sqlite: "SELECT u.username, SUM(d.credits), SUM(d.minutes), SUM(d.sessions)
         FROM users u CROSS JOIN user_usage_days d
         WHERE d.username = u.username AND d.day >= ?1 AND d.day <= ?2
         GROUP BY u.username ORDER BY u.username LIMIT ?3",
    postgres: "SELECT username, SUM(credits)::bigint, SUM(minutes)::bigint,
         SUM(sessions)::bigint FROM user_usage_days WHERE day >= $1 AND day <= $2
         GROUP BY username ORDER BY username LIMIT $3",
);
const USAGE_BY_USER_AFTER: Sql = each!(
    sqlite: "SELECT u.username, SUM(d.credits), SUM(d.minutes), SUM(d.sessions)
         FROM users u CROSS JOIN user_usage_days d
         WHERE u.username > ?3 AND d.username = u.username AND d.day >= ?1 AND d.day <= ?2
         GROUP BY u.username ORDER BY u.username LIMIT ?4",
    postgres: "SELECT username, SUM(credits)::bigint, SUM(minutes)::bigint,
         SUM(sessions)::bigint FROM user_usage_days WHERE username > $3 AND day >= $1 AND day <= $2
         GROUP BY username ORDER BY username LIMIT $4",
);
/// The same, most credits (then minutes) first, at most `$3`.
const USAGE_TOP_USERS: Sql = each!(
    sqlite: "SELECT u.username, SUM(d.credits) AS c, SUM(d.minutes) AS m, SUM(d.sessions)
         FROM users u CROSS JOIN user_usage_days d
         WHERE d.username = u.username AND d.day >= ?1 AND d.day <= ?2
         GROUP BY u.username ORDER BY c DESC, m DESC, u.username LIMIT ?3",
    postgres: "SELECT username, SUM(credits)::bigint AS c, SUM(minutes)::bigint AS m,
         SUM(sessions)::bigint FROM user_usage_days WHERE day >= $1 AND day <= $2
         GROUP BY username ORDER BY c DESC, m DESC, username LIMIT $3",
);
/// (day, resource type, credits, minutes, sessions) of user `$1` in the days `$2` to `$3`.
const USER_USAGE: Sql = same!(
    "SELECT day, resource_type, credits, minutes, sessions FROM user_usage_days
         WHERE username = $1 AND day >= $2 AND day <= $3 ORDER BY day, resource_type"
);
/// (budget, username, day, resource type, sums) in the days `$1` to `$2`, only budget `$3`'s when
/// not null.
const BUDGET_USAGE: Sql = same!(
    "SELECT budget, username, day, resource_type, credits, minutes, sessions
         FROM budget_usage_days WHERE day >= $1 AND day <= $2 AND ($3::text IS NULL OR budget = $3)
         ORDER BY budget, username, day, resource_type"
);

impl UsageStore for SqlStore {
    fn record_usage(&mut self, key: &UsageKey<'_>, u: &Usage) -> Result<(), StoreError> {
        let sums =
            |p: Params| -> Result<Params, StoreError> { p.int(u.credits)?.int(u.minutes)?.int(u.sessions) };
        // One statement: the day's sum of all users follows by trigger (schema 8).
        self.query(
            &RECORD_USER_USAGE_DAY,
            sums(
                Params::new()
                    .text(key.username)
                    .int(key.day)?
                    .text(key.resource_type),
            )?,
        )?;
        if !key.budget.is_empty() {
            self.query(
                &RECORD_BUDGET_USAGE_DAY,
                sums(
                    Params::new()
                        .text(key.budget)
                        .text(key.username)
                        .int(key.day)?
                        .text(key.resource_type),
                )?,
            )?;
        }
        Ok(())
    }

    fn usage_by_day(&mut self, first: i64, last: i64) -> Result<Vec<(i64, String, Usage)>, StoreError> {
        let p = Params::new().int(first)?.int(last)?;
        all(self.query(&USAGE_BY_DAY, p)?, day_usage)
    }

    fn usage_by_user(
        &mut self,
        first: i64,
        last: i64,
        after: Option<&str>,
        n: usize,
    ) -> Result<Vec<(String, Usage)>, StoreError> {
        let p = Params::new().int(first)?.int(last)?;
        let rows = match after {
            Some(a) => self.query(&USAGE_BY_USER_AFTER, p.text(a).int(limit(n))?)?,
            None => self.query(&USAGE_BY_USER_FIRST, p.int(limit(n))?)?,
        };
        all(rows, user_usage_row)
    }

    fn usage_top_users(
        &mut self,
        first: i64,
        last: i64,
        n: usize,
    ) -> Result<Vec<(String, Usage)>, StoreError> {
        let p = Params::new().int(first)?.int(last)?.int(limit(n))?;
        all(self.query(&USAGE_TOP_USERS, p)?, user_usage_row)
    }

    fn user_usage(
        &mut self,
        username: &str,
        first: i64,
        last: i64,
    ) -> Result<Vec<(i64, String, Usage)>, StoreError> {
        let p = Params::new().text(username).int(first)?.int(last)?;
        all(self.query(&USER_USAGE, p)?, day_usage)
    }

    fn budget_usage(
        &mut self,
        first_day: i64,
        last_day: i64,
        name: Option<&str>,
    ) -> Result<Vec<BudgetUsage>, StoreError> {
        let p = Params::new().int(first_day)?.int(last_day)?.opt_text(name);
        all(self.query(&BUDGET_USAGE, p)?, budget_usage)
    }
}
