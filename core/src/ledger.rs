//! The one place a balance changes: every change writes the user row and its audit transaction
//! together, so `amount == balance_after - balance_before` and "balance == sum of amounts" hold by
//! construction.

use crate::error::QuotaError;
use crate::limits;
use crate::store::{Change, NewTransaction, Store, TransactionType, UserRecord};
use crate::time::Timestamp;

/// Narrows an exact result to a balance, refusing values outside the exact range.
pub fn checked_balance(v: i128, what: &str) -> Result<i64, QuotaError> {
    let max = i128::from(limits::balance_abs_max);
    if (-max..=max).contains(&v) {
        // In range of i64 because balance_abs_max is.
        Ok(v as i64)
    } else {
        Err(QuotaError::OutOfRange(format!(
            "{what} would leave the balance range of ±{}; nothing was changed",
            limits::balance_abs_max
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
}

/// Moves `user` to `new_balance`, writing the row and its transaction in one storage call.
pub fn apply(
    store: &mut dyn Store,
    user: &mut UserRecord,
    new_balance: i64,
    entry: Entry<'_>,
    now: Timestamp,
) -> Result<(), QuotaError> {
    let c = change(user, new_balance, entry, now);
    store.record_changes(std::slice::from_ref(&c))?;
    Ok(())
}

/// Moves `user` to `new_balance` and returns the change to write (refresh writes them in pages).
pub fn change(user: &mut UserRecord, new_balance: i64, entry: Entry<'_>, now: Timestamp) -> Change {
    let before = user.balance;
    user.balance = new_balance;
    user.updated_at = now;
    let tx = NewTransaction {
        username: user.username.clone(),
        amount: new_balance - before,
        transaction_type: entry.kind,
        resource_type: entry.resource_type.map(str::to_string),
        description: entry.description,
        balance_before: before,
        balance_after: new_balance,
        created_at: now,
        created_by: entry.created_by.map(str::to_string),
    };
    Change {
        user: user.clone(),
        entry: tx,
    }
}
