//! A user's own history: their ledger and their sessions, a page at a time, newest first. Nothing here names another user: the audit rows leave out who made them.

use serde::Serialize;

use crate::error::QuotaError;
use crate::names::normalize_username;
use crate::sessions::MySession;
use crate::store::{Store, Transaction, TransactionType};
use crate::time::Timestamp;

/// One row of a user's own ledger (without `username` and `created_by`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MyTransaction {
    pub id: i64,
    pub amount: i64,
    pub transaction_type: TransactionType,
    pub resource_type: Option<String>,
    pub description: String,
    pub balance_before: i64,
    pub balance_after: i64,
    pub created_at: Timestamp,
}

impl From<Transaction> for MyTransaction {
    fn from(t: Transaction) -> MyTransaction {
        let (id, e) = t.into_parts();
        MyTransaction {
            id,
            amount: e.amount,
            transaction_type: e.transaction_type,
            resource_type: e.resource_type,
            description: e.description,
            balance_before: e.balance_before,
            balance_after: e.balance_after,
            created_at: e.created_at,
        }
    }
}

/// Up to `limit` of `username`'s transactions with ids below `after`, newest first.
pub fn transactions(
    store: &mut dyn Store,
    username: &str,
    after: Option<i64>,
    limit: usize,
) -> Result<(Vec<MyTransaction>, Option<i64>), QuotaError> {
    let username = normalize_username("username", username)?;
    let mut rows = store.user_transactions(&username, after, limit.saturating_add(1))?;
    let next = (rows.len() > limit).then(|| {
        rows.truncate(limit);
        rows.last().map(|t| t.id)
    });
    Ok((
        rows.into_iter().map(MyTransaction::from).collect(),
        next.flatten(),
    ))
}

/// Up to `limit` of `username`'s sessions with ids below `after`, newest first.
pub fn sessions(
    store: &mut dyn Store,
    username: &str,
    after: Option<i64>,
    limit: usize,
    now: Timestamp,
) -> Result<(Vec<MySession>, Option<i64>), QuotaError> {
    let username = normalize_username("username", username)?;
    let unlimited = store.get_user(&username)?.is_some_and(|u| u.unlimited);
    let mut rows = store.user_sessions(&username, after, limit.saturating_add(1))?;
    let next = (rows.len() > limit).then(|| {
        rows.truncate(limit);
        rows.last().map(|s| s.id)
    });
    Ok((
        rows.into_iter()
            .map(|session| MySession {
                session,
                unlimited,
                now,
            })
            .collect(),
        next.flatten(),
    ))
}
