//! The running usage sums a completed session adds to: per (day, resource type), per (user, day,
//! resource type) and per (budget, member, day, resource type).

use serde::Serialize;

use crate::error::StoreError;

/// Credits charged, billed minutes and completed sessions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub credits: i64,
    pub minutes: i64,
    pub sessions: i64,
}

impl Usage {
    pub fn add(&mut self, o: &Usage) {
        self.credits = self.credits.saturating_add(o.credits);
        self.minutes = self.minutes.saturating_add(o.minutes);
        self.sessions = self.sessions.saturating_add(o.sessions);
    }
}

/// Whose usage of what on which day a completed session adds to the running sums.
#[derive(Clone, Copy, Debug)]
pub struct UsageKey<'a> {
    pub username: &'a str,
    /// The budget charged (`""`: the personal account).
    pub budget: &'a str,
    /// The UTC day (days since 1970-01-01) the session ended.
    pub day: i64,
    pub resource_type: &'a str,
}

/// One row of a budget's running usage sums: who charged it on which day for what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BudgetUsage {
    pub budget: String,
    pub username: String,
    pub day: i64,
    pub resource_type: String,
    pub usage: Usage,
}

/// The usage sums. Every read is of a range of days, which `limits::usage_range_days_max` bounds:
/// at most a row per day and resource type (by user and budget member: a page).
pub trait UsageStore {
    /// Adds a completed session's usage to the running sums of its UTC day: per (day, resource
    /// type), per (user, day, resource type) and, when it charged a budget, per budget member.
    fn record_usage(&mut self, key: &UsageKey<'_>, usage: &Usage) -> Result<(), StoreError>;
    /// (day, resource type, sums) of the days `first` to `last` (both included), by day, then
    /// resource type.
    fn usage_by_day(&mut self, first: i64, last: i64) -> Result<Vec<(i64, String, Usage)>, StoreError>;
    /// Up to `limit` users with usage in the days `first` to `last`, with `username > after`
    /// (all when `None`), and their sums, by username.
    fn usage_by_user(
        &mut self,
        first: i64,
        last: i64,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Usage)>, StoreError>;
    /// The `limit` users with the most credits (then minutes) in the days; ties by username.
    fn usage_top_users(
        &mut self,
        first: i64,
        last: i64,
        limit: usize,
    ) -> Result<Vec<(String, Usage)>, StoreError>;
    /// `username`'s (day, resource type, sums) in the days `first` to `last`, by day, then
    /// resource type.
    fn user_usage(
        &mut self,
        username: &str,
        first: i64,
        last: i64,
    ) -> Result<Vec<(i64, String, Usage)>, StoreError>;
    /// (budget, username, day, resource type, sums) of the budgets' usage in the days `first` to
    /// `last`, only `budget`'s when given; by budget, username, day, resource type.
    fn budget_usage(
        &mut self,
        first: i64,
        last: i64,
        budget: Option<&str>,
    ) -> Result<Vec<BudgetUsage>, StoreError>;
}
