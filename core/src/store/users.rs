//! Users and their ledger: a user's record, the audit transactions, and the balance change that
//! writes both.

use serde::Serialize;

use crate::error::StoreError;
use crate::time::Timestamp;

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

/// An empty string as JSON null (a budget's own transactions have no user).
fn empty_as_null<S: serde::Serializer>(s: &str, out: S) -> Result<S::Ok, S::Error> {
    if s.is_empty() {
        out.serialize_none()
    } else {
        out.serialize_str(s)
    }
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

/// Users and the ledger.
pub trait UserStore {
    fn get_user(&mut self, username: &str) -> Result<Option<UserRecord>, StoreError>;
    /// Inserts or replaces the record.
    fn put_user(&mut self, user: &UserRecord) -> Result<(), StoreError>;
    /// Up to `limit` records with `username > after` (all when `after` is `None`), by username.
    fn scan_users(&mut self, after: Option<&str>, limit: usize) -> Result<Vec<UserRecord>, StoreError>;
    /// The records of these users (those that exist), by username.
    fn users_named(&mut self, names: &[String]) -> Result<Vec<UserRecord>, StoreError>;

    /// For each change in order: writes the user row and appends the transaction (ids increase).
    /// Every operation passes one change, except refresh, which passes a page of them: the one bulk
    /// write, so a refresh of many users costs a few calls, not two per user.
    fn record_changes(&mut self, changes: &[Change]) -> Result<(), StoreError>;
    /// A user's newest transactions, newest first (ties by id desc).
    fn recent_transactions(&mut self, username: &str, limit: usize) -> Result<Vec<Transaction>, StoreError>;
    /// A page of the ledger by id (see [`LedgerPage`]).
    fn scan_transactions(&mut self, page: &LedgerPage<'_>) -> Result<Vec<Transaction>, StoreError>;
    /// Up to `limit` of `username`'s transactions with `id < before` (every id when `None`), newest
    /// (largest id) first: a user's own ledger, a page at a time.
    fn user_transactions(
        &mut self,
        username: &str,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<Transaction>, StoreError>;
    /// The credits `created_by` added (its transactions of a positive amount) at `from` or later
    /// and before `until`, to the personal accounts of `group`'s members as they are now: what
    /// course staff added to a group this month (`staffAllowance`).
    fn added_to_members(
        &mut self,
        created_by: &str,
        group: &str,
        from: Timestamp,
        until: Timestamp,
    ) -> Result<i64, StoreError>;
    /// The same, to budget `budget`'s own account.
    fn added_to_budget(
        &mut self,
        created_by: &str,
        budget: &str,
        from: Timestamp,
        until: Timestamp,
    ) -> Result<i64, StoreError>;
}
