//! Dated grants: credit of an account (a user's or a budget's) that lapses, and the warnings told
//! before it does.

use serde::Serialize;

use crate::error::StoreError;
use crate::time::Timestamp;

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

/// Dated grants, and the `grant.expiring` warnings told about them.
pub trait GrantStore {
    /// An account's grants that still hold credit (`remaining > 0`), by grant id.
    fn account_grants(&mut self, account: &AccountKey) -> Result<Vec<Grant>, StoreError>;
    /// Records a new dated grant of `account` (all of it remaining); returns its id (ids increase).
    fn insert_grant(&mut self, account: &AccountKey, grant: &NewGrant) -> Result<i64, StoreError>;
    /// Sets grants' remaining credit: `(grant_id, remaining)`.
    fn set_grants_remaining(&mut self, changes: &[(i64, i64)]) -> Result<(), StoreError>;
    /// Sets these grants' remaining credit to 0 (written off), in one write.
    fn zero_grants(&mut self, ids: &[i64]) -> Result<(), StoreError> {
        let zero: Vec<(i64, i64)> = ids.iter().map(|id| (*id, 0)).collect();
        self.set_grants_remaining(&zero)
    }
    /// The credit of personal grants due by `now` but not yet written off, of the users from
    /// `first` to `last` (both included) that have some, by username: what reads leave out.
    fn due_user_credit_between(
        &mut self,
        first: &str,
        last: &str,
        now: Timestamp,
    ) -> Result<Vec<(String, i64)>, StoreError>;
    /// Up to `limit` personal grants due by `now` with credit left, by expiry, then id: a page of
    /// the sweep, written off together.
    fn due_user_grants(&mut self, now: Timestamp, limit: usize) -> Result<Vec<(String, Grant)>, StoreError>;
    /// The personal grants holding credit (`remaining > 0`) of the users from `first` to `last`
    /// (both included), by username, then grant id: what a refresh page needs of its users' lots.
    fn user_grants_between(&mut self, first: &str, last: &str) -> Result<Vec<(String, Grant)>, StoreError>;
    /// Up to `limit` budgets with `name > after` (all when `None`) holding a grant due by `now`
    /// (credit left), by name.
    fn due_budgets(
        &mut self,
        now: Timestamp,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError>;

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
}
