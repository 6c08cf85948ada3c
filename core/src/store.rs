//! What the engine keeps, and the small storage trait every backend implements.
//!
//! The trait is shaped for real databases: one call per row read or write, and paged scans where a
//! whole set must be visited (refresh, the list). There is no "load everything" call. Each engine
//! operation is run by its host inside one database transaction, so the engine never needs locks.

use serde::Serialize;

use crate::error::StoreError;
use crate::milli::Milli;
use crate::time::Timestamp;

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

/// A user's quota record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UserRecord {
    pub username: String,
    pub balance: i64,
    pub unlimited: bool,
    pub updated_at: Timestamp,
}

/// The kinds of audit-log transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TransactionType {
    Usage,
    InitialGrant,
    Set,
    Add,
    Deduct,
    SetUnlimited,
    UnsetUnlimited,
    AutoRefresh,
}

impl TransactionType {
    pub fn as_str(self) -> &'static str {
        match self {
            TransactionType::Usage => "usage",
            TransactionType::InitialGrant => "initial_grant",
            TransactionType::Set => "set",
            TransactionType::Add => "add",
            TransactionType::Deduct => "deduct",
            TransactionType::SetUnlimited => "set_unlimited",
            TransactionType::UnsetUnlimited => "unset_unlimited",
            TransactionType::AutoRefresh => "auto_refresh",
        }
    }

    pub fn parse(s: &str) -> Option<TransactionType> {
        Some(match s {
            "usage" => TransactionType::Usage,
            "initial_grant" => TransactionType::InitialGrant,
            "set" => TransactionType::Set,
            "add" => TransactionType::Add,
            "deduct" => TransactionType::Deduct,
            "set_unlimited" => TransactionType::SetUnlimited,
            "unset_unlimited" => TransactionType::UnsetUnlimited,
            "auto_refresh" => TransactionType::AutoRefresh,
            _ => return None,
        })
    }
}

/// An audit-log entry before the store gives it an id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewTransaction {
    pub username: String,
    pub amount: i64,
    pub transaction_type: TransactionType,
    pub resource_type: Option<String>,
    pub description: String,
    pub balance_before: i64,
    pub balance_after: i64,
    pub created_at: Timestamp,
    pub created_by: Option<String>,
}

/// A balance change as storage writes it: the user's new row and its audit entry, together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub user: UserRecord,
    pub entry: NewTransaction,
}

/// An audit-log entry as stored. Invariant: `amount == balance_after - balance_before`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Transaction {
    pub id: i64,
    pub username: String,
    pub amount: i64,
    pub transaction_type: TransactionType,
    pub resource_type: Option<String>,
    pub description: String,
    pub balance_before: i64,
    pub balance_after: i64,
    pub created_at: Timestamp,
    pub created_by: Option<String>,
}

impl NewTransaction {
    pub fn with_id(self, id: i64) -> Transaction {
        Transaction {
            id,
            username: self.username,
            amount: self.amount,
            transaction_type: self.transaction_type,
            resource_type: self.resource_type,
            description: self.description,
            balance_before: self.balance_before,
            balance_after: self.balance_after,
            created_at: self.created_at,
            created_by: self.created_by,
        }
    }
}

impl Transaction {
    /// The id and the entry: the inverse of [`NewTransaction::with_id`].
    pub fn into_parts(self) -> (i64, NewTransaction) {
        let entry = NewTransaction {
            username: self.username,
            amount: self.amount,
            transaction_type: self.transaction_type,
            resource_type: self.resource_type,
            description: self.description,
            balance_before: self.balance_before,
            balance_after: self.balance_after,
            created_at: self.created_at,
            created_by: self.created_by,
        };
        (self.id, entry)
    }
}

/// Where a usage session is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    Active,
    Completed,
    Failed,
    CleanedUp,
}

impl SessionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Active => "active",
            SessionStatus::Completed => "completed",
            SessionStatus::Failed => "failed",
            SessionStatus::CleanedUp => "cleaned_up",
        }
    }

    pub fn parse(s: &str) -> Option<SessionStatus> {
        Some(match s {
            "active" => SessionStatus::Active,
            "completed" => SessionStatus::Completed,
            "failed" => SessionStatus::Failed,
            "cleaned_up" => SessionStatus::CleanedUp,
            _ => return None,
        })
    }
}

/// A usage session before the store gives it an id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewSession {
    pub username: String,
    pub server_name: String,
    pub resource_type: String,
    /// Rate snapshot at start: a later rate change never re-prices a running session.
    pub rate: Milli,
    pub runtime_minutes: i64,
    pub estimated_cost: Milli,
    pub start_time: Timestamp,
    /// False when quota was disabled or the user unlimited at start: never charged.
    pub billable: bool,
}

/// A usage session as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    pub id: i64,
    pub username: String,
    pub server_name: String,
    pub resource_type: String,
    pub rate: Milli,
    pub runtime_minutes: i64,
    pub estimated_cost: Milli,
    pub start_time: Timestamp,
    pub billable: bool,
    pub status: SessionStatus,
    pub end_time: Option<Timestamp>,
    pub duration_minutes: Option<i64>,
    /// Credits charged at the end (positive; 0 when not charged).
    pub cost: i64,
}

impl NewSession {
    pub fn with_id(self, id: i64) -> Session {
        Session {
            id,
            username: self.username,
            server_name: self.server_name,
            resource_type: self.resource_type,
            rate: self.rate,
            runtime_minutes: self.runtime_minutes,
            estimated_cost: self.estimated_cost,
            start_time: self.start_time,
            billable: self.billable,
            status: SessionStatus::Active,
            end_time: None,
            duration_minutes: None,
            cost: 0,
        }
    }
}

impl Session {
    /// What was recorded at start: the inverse of [`NewSession::with_id`], without the ending.
    pub fn start_record(&self) -> NewSession {
        NewSession {
            username: self.username.clone(),
            server_name: self.server_name.clone(),
            resource_type: self.resource_type.clone(),
            rate: self.rate,
            runtime_minutes: self.runtime_minutes,
            estimated_cost: self.estimated_cost,
            start_time: self.start_time,
            billable: self.billable,
        }
    }
}

/// A user's groups as the host last reported them, and since when (the row is rewritten only when
/// the set changes). No row: in no group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Membership {
    pub groups: std::collections::BTreeSet<String>,
    pub since: Timestamp,
}

/// The recorded outcome of a refresh run with a `run_id` (at-most-once).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefreshRun {
    pub run_id: String,
    /// Canonical JSON of the run's parameters; a reuse with other parameters is a conflict.
    pub params: String,
    /// The JSON response of the first run, replayed verbatim; while a chunked run is between
    /// chunks, where it stopped (see `refresh::refresh_step`).
    pub result: String,
    pub created_at: Timestamp,
}

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
    /// Up to `limit` transactions with `id > after_id` and `since <= created_at < until`, by id;
    /// only `username`'s when given.
    fn scan_transactions(
        &mut self,
        username: Option<&str>,
        range: (Timestamp, Timestamp),
        after_id: i64,
        limit: usize,
    ) -> Result<Vec<Transaction>, StoreError>;

    /// Records a new active session and returns its id (ids increase).
    fn insert_session(&mut self, session: &NewSession) -> Result<i64, StoreError>;
    fn get_session(&mut self, id: i64) -> Result<Option<Session>, StoreError>;
    /// Replaces a stored session (same id).
    fn update_session(&mut self, session: &Session) -> Result<(), StoreError>;
    /// The user's active sessions, by id.
    fn active_sessions(&mut self, username: &str) -> Result<Vec<Session>, StoreError>;
    /// The user's record and active sessions: the spawn gate's one read. A backend behind a costly
    /// boundary (the component's host calls) answers it in one call.
    fn gate_state(&mut self, username: &str) -> Result<(Option<UserRecord>, Vec<Session>), StoreError> {
        Ok((self.get_user(username)?, self.active_sessions(username)?))
    }
    /// Active sessions that started strictly before `cutoff`, by id.
    fn stale_sessions(&mut self, cutoff: Timestamp) -> Result<Vec<Session>, StoreError>;
    /// Up to `limit` sessions with `id > after_id`, by id, filtered by username and status when given.
    fn scan_sessions(
        &mut self,
        username: Option<&str>,
        status: Option<SessionStatus>,
        after_id: i64,
        limit: usize,
    ) -> Result<Vec<Session>, StoreError>;

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
    fn record_usage(
        &mut self,
        username: &str,
        day: i64,
        resource_type: &str,
        usage: &Usage,
    ) -> Result<(), StoreError>;
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
}
