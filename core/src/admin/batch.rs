//! Batches of admin changes (`POST .../users/batch`): each entry sets a balance, the unlimited flag
//! or both; the valid entries are applied together, each invalid one is reported with why.

use serde::Serialize;

use super::action::{apply_action, AdminAction};
use crate::engine_call::EngineCall;
use crate::error::QuotaError;
use crate::ledger;
use crate::limits;
use crate::lots;
use crate::names::normalize_username;
use crate::time::Timestamp;

/// One entry of a batch: set the balance, the unlimited flag, or both (balance first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchEntry {
    pub username: String,
    pub amount: Option<i64>,
    pub unlimited: Option<bool>,
    /// With `amount`: the new balance is one dated grant expiring then (a dated `set`).
    pub expires_at: Option<Timestamp>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BatchDetail {
    pub username: String,
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub balance: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unlimited: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BatchResult {
    pub success: usize,
    pub failed: usize,
    pub details: Vec<BatchDetail>,
}

/// Description of the transactions a batch writes.
pub const BATCH_DESCRIPTION: &str = "Batch update";

/// An entry the caller could not even read (wrong JSON types): reported as failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RejectedEntry {
    pub username: String,
    pub error: QuotaError,
}

pub type BatchItem = Result<BatchEntry, RejectedEntry>;

/// Applies each valid entry; an invalid one is counted in `failed` and changes nothing.
pub fn batch(
    tx: &mut EngineCall<'_>,
    entries: &[BatchItem],
    caller: &str,
    now: Timestamp,
) -> Result<BatchResult, QuotaError> {
    if entries.len() > limits::BATCH_USERS_MAX {
        return Err(QuotaError::invalid(
            "users",
            format!("must have at most {} entries", limits::BATCH_USERS_MAX),
        ));
    }
    let mut result = BatchResult {
        success: 0,
        failed: 0,
        details: Vec::with_capacity(entries.len()),
    };
    for item in entries {
        let (username, outcome) = match item {
            Ok(e) => (&e.username, batch_one(tx, e, caller, now)),
            Err(r) => (&r.username, Err(r.error.clone())),
        };
        match outcome {
            Ok(detail) => {
                result.success += 1;
                result.details.push(detail);
            }
            Err(QuotaError::Store(s)) => return Err(QuotaError::Store(s)),
            Err(err) => {
                result.failed += 1;
                result.details.push(BatchDetail {
                    username: username.clone(),
                    status: "failed",
                    balance: None,
                    unlimited: None,
                    error: Some(err.to_string()),
                });
            }
        }
    }
    Ok(result)
}

fn batch_one(
    tx: &mut EngineCall<'_>,
    e: &BatchEntry,
    caller: &str,
    now: Timestamp,
) -> Result<BatchDetail, QuotaError> {
    let username = normalize_username("username", &e.username)?;
    if e.amount.is_none() && e.unlimited.is_none() {
        return Err(QuotaError::invalid(
            "amount",
            "an entry needs `amount`, `unlimited` or both",
        ));
    }
    if let Some(a) = e.amount {
        AdminAction::Set(a).validate()?;
    }
    let expires_at = match (e.expires_at, e.amount) {
        (None, _) => None,
        (Some(at), Some(_)) => Some(lots::check_expires_at("expires_at", at, now)?),
        (Some(_), None) => {
            return Err(QuotaError::invalid(
                "expires_at",
                "is only used with `amount` (a dated balance)",
            ))
        }
    };
    // The amount first, then the flag: the balance answered is the last action's.
    let actions = e.amount.map(AdminAction::Set).into_iter();
    let mut user = ledger::user_or_new(tx.store(), &username, now)?;
    let mut balance = 0;
    for action in actions.chain(e.unlimited.map(AdminAction::SetUnlimited)) {
        let description = BATCH_DESCRIPTION.into();
        let at = if let AdminAction::Set(_) = action {
            expires_at
        } else {
            None
        };
        balance = apply_action(tx, &mut user, action, at, description, caller, now)?;
    }
    Ok(BatchDetail {
        username,
        status: "success",
        balance: Some(balance),
        unlimited: e.unlimited,
        error: None,
    })
}
