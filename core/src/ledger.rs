//! The one place a balance changes: every change writes the account's row (a user's record or a
//! budget's) and its audit transaction together, so `amount == balance_after - balance_before` and
//! "balance == sum of amounts" hold by construction, per account.

use crate::engine_call::EngineCall;
use crate::error::QuotaError;
use crate::error::StoreError;
use crate::limits;
use crate::store::{
    AccountKey, BudgetChange, BudgetRow, Change, NewTransaction, Store, TransactionType, UserRecord,
};
use crate::time::Timestamp;

/// Narrows an exact result to a balance, refusing values outside the exact range.
pub fn checked_balance(v: i128, what: &str) -> Result<i64, QuotaError> {
    let max = i128::from(limits::BALANCE_ABS_MAX);
    if (-max..=max).contains(&v) {
        // In range of i64 because balance_abs_max is.
        Ok(v as i64)
    } else {
        Err(QuotaError::OutOfRange(format!(
            "{what} would leave the balance range of ±{}; nothing was changed",
            limits::BALANCE_ABS_MAX
        )))
    }
}

/// The stored record, or a fresh one with balance 0 (not yet written).
pub fn user_or_new(store: &mut dyn Store, username: &str, now: Timestamp) -> Result<UserRecord, QuotaError> {
    Ok(store
        .get_user(username)?
        .unwrap_or_else(|| new_user(username, now)))
}

/// A user who has no row yet: balance 0, limited.
pub fn new_user(username: &str, now: Timestamp) -> UserRecord {
    UserRecord {
        username: username.to_string(),
        balance: 0,
        unlimited: false,
        updated_at: now,
    }
}

/// What a transaction says besides the numbers.
pub struct Entry<'a> {
    pub kind: TransactionType,
    pub resource_type: Option<&'a str>,
    pub description: String,
    pub created_by: Option<&'a str>,
    /// The expiry of the grant this change makes, if it makes one.
    pub expires_at: Option<Timestamp>,
}

impl<'a> Entry<'a> {
    /// An entry of `kind` with `description`, no resource type, creator or expiry.
    pub fn of(kind: TransactionType, description: String) -> Entry<'a> {
        Entry {
            kind,
            resource_type: None,
            description,
            created_by: None,
            expires_at: None,
        }
    }
}

/// An account whose balance the ledger moves: a user's personal record, or a budget's row (with
/// the member a charge names).
pub trait Account {
    fn key(&self) -> AccountKey;
    fn balance(&self) -> i64;
    /// Moves the account to `new_balance` and writes its row and transaction in one storage call.
    fn write(
        &mut self,
        tx: &mut EngineCall<'_>,
        new_balance: i64,
        entry: Entry<'_>,
        now: Timestamp,
    ) -> Result<(), StoreError>;
    /// Sets the unlimited flag (a user's; a budget is never unlimited).
    fn set_unlimited(&mut self, _flag: bool) {}
}

impl Account for UserRecord {
    fn key(&self) -> AccountKey {
        AccountKey::User(self.username.clone())
    }

    fn balance(&self) -> i64 {
        self.balance
    }

    fn set_unlimited(&mut self, flag: bool) {
        self.unlimited = flag;
    }

    fn write(
        &mut self,
        tx: &mut EngineCall<'_>,
        new_balance: i64,
        entry: Entry<'_>,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let c = change(tx, self, new_balance, entry, now);
        tx.record_changes(std::slice::from_ref(&c))
    }
}

/// A budget's account: its row, and the member whose session a charge is for (`""` for the
/// budget's own changes: admin actions, refresh, expiry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BudgetAccount {
    pub row: BudgetRow,
    pub member: String,
}

impl Account for BudgetAccount {
    fn key(&self) -> AccountKey {
        AccountKey::Budget(self.row.name.clone())
    }

    fn balance(&self) -> i64 {
        self.row.balance
    }

    fn write(
        &mut self,
        tx: &mut EngineCall<'_>,
        new_balance: i64,
        entry: Entry<'_>,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let before = self.row.balance;
        tx.note_move(self.key(), before, new_balance);
        self.row.balance = new_balance;
        self.row.updated_at = now;
        let row = transaction(
            &self.member,
            Some(&self.row.name),
            before,
            new_balance,
            entry,
            now,
        );
        tx.record_budget_change(&BudgetChange {
            budget: self.row.clone(),
            entry: row,
        })
    }
}

fn transaction(
    username: &str,
    budget: Option<&str>,
    before: i64,
    after: i64,
    entry: Entry<'_>,
    now: Timestamp,
) -> NewTransaction {
    crate::invariants::ledger_row(after - before, before, after);
    NewTransaction {
        username: username.to_string(),
        amount: after - before,
        transaction_type: entry.kind,
        resource_type: entry.resource_type.map(str::to_string),
        description: entry.description,
        balance_before: before,
        balance_after: after,
        created_at: now,
        created_by: entry.created_by.map(str::to_string),
        budget: budget.map(str::to_string),
        expires_at: entry.expires_at,
    }
}

/// Moves `account` to `new_balance`, writing the row and its transaction in one storage call.
pub fn apply<A: Account + ?Sized>(
    tx: &mut EngineCall<'_>,
    account: &mut A,
    new_balance: i64,
    entry: Entry<'_>,
    now: Timestamp,
) -> Result<(), QuotaError> {
    account.write(tx, new_balance, entry, now)?;
    Ok(())
}

/// Moves `user` to `new_balance` and returns the change to write (refresh writes them in pages).
pub fn change(
    tx: &mut EngineCall<'_>,
    user: &mut UserRecord,
    new_balance: i64,
    entry: Entry<'_>,
    now: Timestamp,
) -> Change {
    let before = user.balance;
    if !user.unlimited {
        tx.note_move(user.key(), before, new_balance);
    }
    user.balance = new_balance;
    user.updated_at = now;
    let tx = transaction(&user.username, None, before, new_balance, entry, now);
    Change {
        user: user.clone(),
        entry: tx,
    }
}
