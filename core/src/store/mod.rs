//! What the engine keeps, and the small storage trait every backend implements.
//!
//! The trait is shaped for real databases: one call per row read or write, and paged scans where a
//! whole set must be visited (refresh, the list). There is no "load everything" call. Each engine
//! operation is run by its host inside one database transaction, so the engine never needs locks.

mod feed;
mod records;

pub use feed::*;
pub use records::*;

use crate::error::StoreError;
use crate::time::Timestamp;

/// Storage as the engine sees it. Every method is one row read or write, or one page of a scan.
///
/// Hosts run each engine operation inside one transaction and roll it back when the operation
/// returns a `StoreError` (or the guest traps), so implementations need no atomicity of their own.
pub trait Store {
    fn get_user(&mut self, username: &str) -> Result<Option<UserRecord>, StoreError>;
    /// Inserts or replaces the record.
    fn put_user(&mut self, user: &UserRecord) -> Result<(), StoreError>;
    /// Up to `limit` records with `username > after` (all when `after` is `None`), by username.
    fn scan_users(&mut self, after: Option<&str>, limit: usize) -> Result<Vec<UserRecord>, StoreError>;

    /// For each change in order: writes the user row and appends the transaction (ids increase).
    /// Every operation passes one change, except refresh, which passes a page of them: the one bulk
    /// write, so a refresh of many users costs a few calls, not two per user.
    fn record_changes(&mut self, changes: &[Change]) -> Result<(), StoreError>;
    /// A user's newest transactions, newest first (ties by id desc).
    fn recent_transactions(&mut self, username: &str, limit: usize) -> Result<Vec<Transaction>, StoreError>;
    /// A page of the ledger by id (see [`LedgerPage`]).
    fn scan_transactions(&mut self, page: &LedgerPage<'_>) -> Result<Vec<Transaction>, StoreError>;

    /// Records a new active session and returns its id (ids increase).
    fn insert_session(&mut self, session: &NewSession) -> Result<i64, StoreError>;
    fn get_session(&mut self, id: i64) -> Result<Option<Session>, StoreError>;
    /// Replaces a stored session (same id).
    fn update_session(&mut self, session: &Session) -> Result<(), StoreError>;
    /// The user's active sessions, by id.
    fn active_sessions(&mut self, username: &str) -> Result<Vec<Session>, StoreError>;
    /// The user's record, active sessions and (`with_groups`) stored groups: the spawn gate's one
    /// read. A backend behind a costly boundary (the component's host calls) answers it in one call.
    fn gate_state(&mut self, username: &str, with_groups: bool) -> Result<GateState, StoreError> {
        Ok(GateState {
            user: self.get_user(username)?,
            active: self.active_sessions(username)?,
            groups: if with_groups {
                self.get_membership(username)?
                    .map(|m| crate::groups::text::GroupNames::from_set(&m.groups))
            } else {
                None
            },
        })
    }
    /// A session and its user's record: the end of a session's one read (see `gate_state`).
    fn session_and_user(&mut self, id: i64) -> Result<Option<(Session, Option<UserRecord>)>, StoreError> {
        match self.get_session(id)? {
            Some(s) => {
                let user = self.get_user(&s.username)?;
                Ok(Some((s, user)))
            }
            None => Ok(None),
        }
    }
    /// Active sessions that started strictly before `cutoff`, by id.
    fn stale_sessions(&mut self, cutoff: Timestamp) -> Result<Vec<Session>, StoreError>;
    /// A page of the sessions by id (see [`SessionPage`]).
    fn scan_sessions(&mut self, page: &SessionPage<'_>) -> Result<Vec<Session>, StoreError>;

    fn get_refresh_run(&mut self, run_id: &str) -> Result<Option<RefreshRun>, StoreError>;

    /// Up to `limit` of `username`'s transactions with `id < before` (every id when `None`), newest
    /// (largest id) first: a user's own ledger, a page at a time.
    fn user_transactions(
        &mut self,
        username: &str,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<Transaction>, StoreError>;
    /// The same for `username`'s sessions.
    fn user_sessions(
        &mut self,
        username: &str,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<Session>, StoreError>;

    /// A user's groups (none when never reported).
    fn get_membership(&mut self, username: &str) -> Result<Option<Membership>, StoreError>;
    /// Writes a user's groups when they differ from the stored ones (no groups and no row: nothing
    /// to write); returns whether they did. The gate calls this with the groups a host reports at
    /// every start, so an unchanged set must cost no more than a look-up.
    fn put_membership(
        &mut self,
        username: &str,
        groups: &std::collections::BTreeSet<String>,
        since: Timestamp,
    ) -> Result<bool, StoreError>;
    /// [`Store::put_membership`] for each of `users` (a page of a snapshot, each username once), in
    /// as few statements as the store can; returns how many changed. The default asks one at a time.
    fn put_memberships(
        &mut self,
        users: &[(&str, &std::collections::BTreeSet<String>)],
        since: Timestamp,
    ) -> Result<u64, StoreError> {
        let mut changed = 0;
        for (u, g) in users {
            changed += u64::from(self.put_membership(u, g, since)?);
        }
        Ok(changed)
    }
    /// Up to `limit` memberships with `username > after` (all when `after` is `None`), by username.
    fn scan_memberships(
        &mut self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Membership)>, StoreError>;
    /// The memberships of usernames from `first` to `last` (both included), by username: the groups
    /// of one page of the user list, in one read.
    fn memberships_between(
        &mut self,
        first: &str,
        last: &str,
    ) -> Result<Vec<(String, Membership)>, StoreError>;
    /// (username, group) for every user from `first` to `last` (both included) who is in one of
    /// `groups`, by username: what a refresh page needs of the groups its targets name, in one read.
    fn group_members_between(
        &mut self,
        groups: &std::collections::BTreeSet<String>,
        first: &str,
        last: &str,
    ) -> Result<Vec<(String, String)>, StoreError>;
    /// Up to `limit` members of `group` with `username > after`, by username.
    fn scan_group(&mut self, group: &str, after: &str, limit: usize) -> Result<Vec<String>, StoreError>;
    /// Every group with at least one member, and how many, by name.
    fn group_counts(&mut self) -> Result<Vec<(String, u64)>, StoreError>;
    /// Inserts or replaces the run with this `run_id` (a chunked run records its progress).
    fn put_refresh_run(&mut self, run: &RefreshRun) -> Result<(), StoreError>;

    /// Adds a completed session's usage to the running sums of its UTC day `day` (see `usage`):
    /// per (day, resource type) and per (user, day, resource type).
    fn record_usage(&mut self, key: &UsageKey<'_>, usage: &Usage) -> Result<(), StoreError>;

    /// An account's grants that still hold credit (`remaining > 0`), by grant id.
    fn account_grants(&mut self, account: &AccountKey) -> Result<Vec<Grant>, StoreError>;
    /// Records a new dated grant of `account` (all of it remaining); returns its id (ids increase).
    fn insert_grant(&mut self, account: &AccountKey, grant: &NewGrant) -> Result<i64, StoreError>;
    /// Sets grants' remaining credit: `(grant_id, remaining)`.
    fn set_grants_remaining(&mut self, changes: &[(i64, i64)]) -> Result<(), StoreError>;
    /// The credit of personal grants due by `now` but not yet written off, of the users from
    /// `first` to `last` (both included) that have some, by username: what reads leave out.
    fn due_user_credit_between(
        &mut self,
        first: &str,
        last: &str,
        now: Timestamp,
    ) -> Result<Vec<(String, i64)>, StoreError>;
    /// A budget's row (`None`: never written: balance 0, values-defined or unknown).
    fn get_budget(&mut self, name: &str) -> Result<Option<BudgetRow>, StoreError>;
    /// The same, held against other writers until the call's transaction ends: a start charging
    /// the budget reads its reservations after this, so concurrent starts never overspend it.
    fn lock_budget(&mut self, name: &str) -> Result<Option<BudgetRow>, StoreError> {
        self.get_budget(name)
    }
    /// Inserts or replaces a budget's row (a definition stored over REST, or its balance).
    fn put_budget(&mut self, budget: &BudgetRow) -> Result<(), StoreError>;
    /// Deletes a budget's row and its grants; its transactions stay in the ledger.
    fn delete_budget(&mut self, name: &str) -> Result<(), StoreError>;
    /// Every stored budget row, by name.
    fn budgets(&mut self) -> Result<Vec<BudgetRow>, StoreError>;
    /// Writes the budget's row and appends its transaction (one change, as `record_changes`).
    fn record_budget_change(&mut self, change: &BudgetChange) -> Result<(), StoreError>;
    /// The active sessions charging `budget`, by id.
    fn budget_sessions(&mut self, budget: &str) -> Result<Vec<Session>, StoreError>;
    /// What the billable active sessions charging `budget` hold (thousandths), only `username`'s
    /// when given: the gate's one read of a budget's reservations, however many are running.
    fn budget_held(&mut self, budget: &str, username: Option<&str>) -> Result<i64, StoreError> {
        Ok(self
            .budget_sessions(budget)?
            .iter()
            .filter(|s| s.billable && username.is_none_or(|u| s.username == u))
            .map(|s| s.estimated_cost.raw())
            .sum())
    }
    /// The credits each member charged `budget` (its `usage` transactions) with `created_at >=
    /// since`, by username; only `username`'s when given.
    fn budget_spent(
        &mut self,
        budget: &str,
        since: Timestamp,
        username: Option<&str>,
    ) -> Result<Vec<(String, i64)>, StoreError>;
    /// A budget's newest transactions, newest first (ties by id desc).
    fn recent_budget_transactions(
        &mut self,
        budget: &str,
        limit: usize,
    ) -> Result<Vec<Transaction>, StoreError>;
    /// (budget, username, day, resource type, sums) of the budgets' usage in the days `first` to
    /// `last`, only `budget`'s when given; by budget, username, day, resource type.
    fn budget_usage(
        &mut self,
        first: i64,
        last: i64,
        budget: Option<&str>,
    ) -> Result<Vec<BudgetUsage>, StoreError>;
    /// The budgets holding a grant due by `now` (credit left), by name.
    fn due_budgets(&mut self, now: Timestamp) -> Result<Vec<String>, StoreError>;
    /// Up to `limit` personal grants due by `now` with credit left, by expiry, then id: a page of
    /// the sweep, written off together.
    fn due_user_grants(&mut self, now: Timestamp, limit: usize) -> Result<Vec<(String, Grant)>, StoreError>;
    /// The records of these users (those that exist), by username.
    fn users_named(&mut self, names: &[String]) -> Result<Vec<UserRecord>, StoreError>;
    /// Sets these grants' remaining credit to 0 (written off), in one write.
    fn zero_grants(&mut self, ids: &[i64]) -> Result<(), StoreError> {
        let zero: Vec<(i64, i64)> = ids.iter().map(|id| (*id, 0)).collect();
        self.set_grants_remaining(&zero)
    }
    /// The personal grants holding credit (`remaining > 0`) of the users from `first` to `last`
    /// (both included), by username, then grant id: what a refresh page needs of its users' lots.
    fn user_grants_between(&mut self, first: &str, last: &str) -> Result<Vec<(String, Grant)>, StoreError>;
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

    /// Appends events (ids increase, in this order). On a database several writers share, the
    /// ids are handed out in commit order (credit model 2: a webhook's cursor never skips one).
    fn insert_events(&mut self, events: &[NewEvent]) -> Result<(), StoreError>;
    /// A page of events (see [`EventPage`]).
    fn scan_events(&mut self, page: &EventPage<'_>) -> Result<Vec<StoredEvent>, StoreError>;
    /// The newest event's id (0: none).
    fn last_event_id(&mut self) -> Result<i64, StoreError>;
    /// How many events of the kinds in `kinds` (`",k1,k2,"`) have an id greater than `after`.
    fn count_events(&mut self, after: i64, kinds: &str) -> Result<u64, StoreError>;
    /// Deletes the events written before `before` among the `limit` oldest, never the newest one,
    /// and the webhook failures recorded before `before`; returns how many events.
    fn purge_events(&mut self, before: Timestamp, limit: usize) -> Result<u64, StoreError>;

    /// Up to `limit` active sessions whose `warn_at` has come by `now`, by `warn_at` then id, each
    /// with the smallest mark told so far.
    fn sessions_to_warn(
        &mut self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<(Session, Option<i64>)>, StoreError>;
    /// Records what a session was told: the smallest mark told (`None`: none) and when the next
    /// one passes (`None`: none left).
    fn set_session_warning(
        &mut self,
        id: i64,
        warned_mark: Option<i64>,
        warn_at: Option<Timestamp>,
    ) -> Result<(), StoreError>;
    /// A running session extended: its runtime, its reservation and its warnings.
    fn extend_session(&mut self, session: &Session, warned_mark: Option<i64>) -> Result<(), StoreError>;
    /// The smallest mark told to session `id` (`None`: none yet).
    fn session_warned_mark(&mut self, id: i64) -> Result<Option<i64>, StoreError>;
    /// Gives every grant that holds credit and has no warning time yet one: `lead_seconds` before
    /// its expiry (a grant made by any route is armed by the next sweep).
    fn arm_grant_warnings(&mut self, lead_seconds: i64) -> Result<(), StoreError>;
    /// Up to `limit` grants with credit, not yet expired at `now`, whose warning time has come, by
    /// warning time then id: each with its account and the smallest mark (days) told so far.
    fn grants_to_warn(
        &mut self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<(AccountKey, Grant, Option<i64>)>, StoreError>;
    /// Records what a grant was told, and when its next mark passes (its expiry: none left).
    fn set_grant_warning(
        &mut self,
        id: i64,
        warned_mark: Option<i64>,
        warn_at: Timestamp,
    ) -> Result<(), StoreError>;

    /// A webhook's delivery state (`None`: never delivered to).
    fn get_webhook(&mut self, name: &str) -> Result<Option<WebhookRow>, StoreError>;
    /// The same, held against other writers until the call's transaction ends (two replicas
    /// stepping one webhook at once: the second sees what the first wrote).
    fn lock_webhook(&mut self, name: &str) -> Result<Option<WebhookRow>, StoreError> {
        self.get_webhook(name)
    }
    /// Inserts or replaces a webhook's delivery state.
    fn put_webhook(&mut self, row: &WebhookRow) -> Result<(), StoreError>;
    /// Records that delivering event `event_id` to webhook `name` failed for good.
    fn add_webhook_failure(
        &mut self,
        name: &str,
        event_id: i64,
        error: &str,
        at: Timestamp,
    ) -> Result<(), StoreError>;
    /// How many deliveries to webhook `name` failed for good (of events still kept).
    fn count_webhook_failures(&mut self, name: &str) -> Result<u64, StoreError>;
    /// Forgets the failures of webhook `name` from event `from_id` on (they are queued again).
    fn drop_webhook_failures(&mut self, name: &str, from_id: i64) -> Result<(), StoreError>;
}
