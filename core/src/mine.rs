//! What a user sees of their own usage: their ledger and their sessions, a page at a time, newest
//! first. Nothing here names another user: the audit rows leave out who made them.

use serde::Serialize;

use crate::error::QuotaError;
use crate::milli::Milli;
use crate::names::normalize_username;
use crate::sessions::billed_minutes;
use crate::store::{Session, SessionStatus, Store, Transaction, TransactionType};
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

/// One of a user's own sessions; a running one says when its auto-stop ends it and what ending it
/// now would charge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MySession {
    pub session_id: i64,
    pub server_name: String,
    pub resource_type: String,
    pub status: SessionStatus,
    pub start_time: Timestamp,
    pub end_time: Option<Timestamp>,
    pub duration_minutes: Option<i64>,
    pub cost: i64,
    pub rate: Milli,
    pub runtime_minutes: i64,
    pub estimated_cost: Milli,
    /// Running: `start_time + runtime_minutes`, when the hub stops it.
    pub ends_at: Option<Timestamp>,
    /// Running: the credits ending it now would charge (0 when it is not billed).
    pub cost_so_far: Option<i64>,
    /// The budget it charges (null: the personal account).
    pub budget: Option<String>,
}

fn my_session(s: Session, unlimited: bool, now: Timestamp) -> MySession {
    let running = s.status == SessionStatus::Active;
    let so_far = || {
        // An unlimited user's own sessions cost nothing; a budget's are charged whoever runs them.
        if !s.billable || (unlimited && s.budget.is_none()) {
            return 0;
        }
        let minutes = billed_minutes(now.seconds() - s.start_time.seconds()).min(s.runtime_minutes);
        s.rate.times(minutes).map_or(i64::MAX, Milli::ceil)
    };
    MySession {
        ends_at: running.then(|| s.start_time.plus_seconds(s.runtime_minutes * 60)),
        cost_so_far: running.then(so_far),
        budget: s.budget.clone(),
        session_id: s.id,
        server_name: s.start.server_name,
        resource_type: s.start.resource_type,
        status: s.status,
        start_time: s.start.start_time,
        end_time: s.end_time,
        duration_minutes: s.duration_minutes,
        cost: s.cost,
        rate: s.start.rate,
        runtime_minutes: s.start.runtime_minutes,
        estimated_cost: s.start.estimated_cost,
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
        rows.into_iter().map(|s| my_session(s, unlimited, now)).collect(),
        next.flatten(),
    ))
}
