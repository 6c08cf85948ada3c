//! The rows the engine keeps: users, ledger entries, sessions, memberships, refresh runs, usage sums.

use serde::Serialize;

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
    /// A dated grant's remaining credit lapsed (dated at the grant's expiry).
    Expire,
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
            TransactionType::Expire => "expire",
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
            "expire" => TransactionType::Expire,
            _ => return None,
        })
    }
}

/// An audit-log entry before the store gives it an id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NewTransaction {
    #[serde(serialize_with = "empty_as_null")]
    pub username: String,
    pub amount: i64,
    pub transaction_type: TransactionType,
    pub resource_type: Option<String>,
    pub description: String,
    pub balance_before: i64,
    pub balance_after: i64,
    pub created_at: Timestamp,
    pub created_by: Option<String>,
    /// The budget whose balance moved; `None`: `username`'s personal account. A budget's own
    /// changes (admin actions, refresh, expiry) have an empty `username` (null on the wire); its
    /// `usage` names the member who ran the session.
    pub budget: Option<String>,
    /// The expiry of the grant this transaction made, if it made one.
    pub expires_at: Option<Timestamp>,
}

/// A balance change as storage writes it: the user's new row and its audit entry, together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub user: UserRecord,
    pub entry: NewTransaction,
}

/// An audit-log entry as stored: its id and the entry (read through as if its fields were the
/// transaction's own; on the wire the id comes first, then the entry's fields). Invariant:
/// `amount == balance_after - balance_before`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Transaction {
    pub id: i64,
    #[serde(flatten)]
    pub entry: NewTransaction,
}

impl std::ops::Deref for Transaction {
    type Target = NewTransaction;

    fn deref(&self) -> &NewTransaction {
        &self.entry
    }
}

impl NewTransaction {
    pub fn with_id(self, id: i64) -> Transaction {
        Transaction { id, entry: self }
    }
}

impl Transaction {
    /// The id and the entry: the inverse of [`NewTransaction::with_id`].
    pub fn into_parts(self) -> (i64, NewTransaction) {
        (self.id, self.entry)
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
    /// The budget it charges; `None`: the user's personal account.
    pub budget: Option<String>,
    /// When the next `session.ending` mark passes (`None`: none left to tell).
    pub warn_at: Option<Timestamp>,
}

/// A usage session as stored: what was recorded at start (`start`, read through as if its fields
/// were the session's own), its id and how it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    pub id: i64,
    pub start: NewSession,
    pub status: SessionStatus,
    pub end_time: Option<Timestamp>,
    pub duration_minutes: Option<i64>,
    /// Credits charged at the end (positive; 0 when not charged).
    pub cost: i64,
}

impl std::ops::Deref for Session {
    type Target = NewSession;

    fn deref(&self) -> &NewSession {
        &self.start
    }
}

impl NewSession {
    pub fn with_id(self, id: i64) -> Session {
        Session {
            id,
            start: self,
            status: SessionStatus::Active,
            end_time: None,
            duration_minutes: None,
            cost: 0,
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

/// What the spawn gate reads of a user in one store call (`Store::gate_state`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GateState {
    pub user: Option<UserRecord>,
    /// The user's active sessions, by id.
    pub active: Vec<Session>,
    /// The user's stored groups, when asked for (None: not asked, or in no group).
    pub groups: Option<crate::groups::text::GroupNames>,
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

/// A page of the ledger: up to `limit` transactions with `id > after_id` and
/// `since <= created_at < until`, by id; only `username`'s and `budget`'s when given.
#[derive(Clone, Copy, Debug)]
pub struct LedgerPage<'a> {
    /// Only this user's personal account (with `budget` `None`), or this member's rows of the
    /// budget.
    pub username: Option<&'a str>,
    /// Only this budget's transactions.
    pub budget: Option<&'a str>,
    pub since: Timestamp,
    pub until: Timestamp,
    pub after_id: i64,
    pub limit: usize,
}

/// A page of the sessions: up to `limit` with `id > after_id`, by id, filtered by username and
/// status when given.
#[derive(Clone, Copy, Debug)]
pub struct SessionPage<'a> {
    pub username: Option<&'a str>,
    pub status: Option<SessionStatus>,
    pub after_id: i64,
    pub limit: usize,
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

/// Whose credit: a user's personal account, or a budget.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AccountKey {
    User(String),
    Budget(String),
}

/// A dated grant before the store gives it an id: all of `amount` remains.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewGrant {
    pub amount: i64,
    pub granted_at: Timestamp,
    pub expires_at: Timestamp,
}

/// A dated grant as stored (and as reads show it): credit that lapses at `expires_at`.
/// `0 <= remaining <= amount`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Grant {
    pub grant_id: i64,
    pub amount: i64,
    pub remaining: i64,
    pub granted_at: Timestamp,
    pub expires_at: Timestamp,
}

impl Grant {
    /// Counts at time `t`: not yet expired, credit left.
    pub fn live_at(&self, t: Timestamp) -> bool {
        self.expires_at > t && self.remaining > 0
    }

    /// Its expiry has come by `t` and credit is left: an `expire` transaction is owed.
    pub fn due_at(&self, t: Timestamp) -> bool {
        self.expires_at <= t && self.remaining > 0
    }
}

/// A budget's stored row: its balance, and its definition when it was made over REST.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BudgetRow {
    pub name: String,
    pub balance: i64,
    pub updated_at: Timestamp,
    /// The definition a `PUT` stored (canonical JSON, snake_case keys); `None` for a budget the
    /// values file defines, whose row only holds its balance.
    pub definition: Option<String>,
}

/// A budget's balance change as storage writes it: the row and its audit entry, together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BudgetChange {
    pub budget: BudgetRow,
    pub entry: NewTransaction,
}

/// An empty string as JSON null (a budget's own transactions have no user).
fn empty_as_null<S: serde::Serializer>(s: &str, out: S) -> Result<S::Ok, S::Error> {
    if s.is_empty() {
        out.serialize_none()
    } else {
        out.serialize_str(s)
    }
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
