//! The account as of now, built from what one read returns: the stored record, its dated grants
//! and the user's running sessions. Pure: no store, no clock.

use crate::lots;
use crate::store::{Grant, Session, UserRecord};
use crate::time::Timestamp;

/// What the running sessions `active` hold on their user's personal account (thousandths): the
/// estimated costs of the billable ones that charge no budget.
pub fn held_personal(active: &[Session]) -> i64 {
    let held = active
        .iter()
        .filter(|s| s.billable && s.budget.is_none())
        .map(|s| s.estimated_cost.raw())
        .sum();
    crate::invariants::held(held);
    held
}

/// What the running sessions `active` hold on budget `budget` (thousandths), only `username`'s
/// when given: a member's share, or (over the budget's own sessions) its total.
pub fn held_on_budget(active: &[Session], budget: &str, username: Option<&str>) -> i64 {
    let held = active
        .iter()
        .filter(|s| s.billable && s.budget.as_deref() == Some(budget))
        .filter(|s| username.is_none_or(|u| s.username == u))
        .map(|s| s.estimated_cost.raw())
        .sum();
    crate::invariants::held(held);
    held
}

/// A user's record as of `now`: the credit of its grants whose expiry has come is left out (their
/// `expire` transactions are written by the account's next write).
pub fn as_of(mut record: UserRecord, grants: &[Grant], now: Timestamp) -> UserRecord {
    record.balance = lots::balance_at(record.balance, grants, now);
    record
}

/// An account that pays for an ask, as of now: its balance (whole credits, dated grants past
/// their expiry left out) and what its running servers hold (thousandths).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Paying {
    pub balance: i64,
    pub held: i64,
}

impl Paying {
    /// What is left for new reservations (thousandths); negative in debt.
    pub fn available(self) -> i128 {
        i128::from(self.balance) * 1000 - i128::from(self.held)
    }
}

/// A user's personal account as of now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountView {
    /// The stored record with its balance as of now (`None`: never written, balance 0).
    pub record: Option<UserRecord>,
    /// What the user's running servers hold on it (thousandths).
    pub held: i64,
}

impl AccountView {
    /// The view from one read: the record, its grants (for the balance as of `now`: a grant whose
    /// expiry has come no longer counts, though its `expire` transaction is written only by the
    /// account's next write) and the user's running sessions.
    pub fn of(
        record: Option<UserRecord>,
        grants: &[Grant],
        active: &[Session],
        now: Timestamp,
    ) -> AccountView {
        AccountView {
            record: record.map(|u| as_of(u, grants, now)),
            held: held_personal(active),
        }
    }

    pub fn balance(&self) -> i64 {
        self.record.as_ref().map_or(0, |u| u.balance)
    }

    pub fn unlimited(&self) -> bool {
        self.record.as_ref().is_some_and(|u| u.unlimited)
    }

    /// The account as a payer.
    pub fn paying(&self) -> Paying {
        Paying {
            balance: self.balance(),
            held: self.held,
        }
    }
}
