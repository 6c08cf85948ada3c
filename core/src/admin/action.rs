//! One admin change to one account (`set`, `add`, `deduct`, `set_unlimited`), checked and applied.

use serde::Serialize;

use crate::engine_call::EngineCall;
use crate::error::QuotaError;
use crate::grants;
use crate::ledger::{self, Account, Entry};
use crate::limits;
use crate::lots;
use crate::names::normalize_username;
use crate::store::{NewGrant, TransactionType};
use crate::time::Timestamp;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdminAction {
    /// The balance becomes the amount (>= 0).
    Set(i64),
    /// The signed amount is added.
    Add(i64),
    /// The amount (> 0) is subtracted; refused when the balance is smaller.
    Deduct(i64),
    SetUnlimited(bool),
}

impl AdminAction {
    pub fn name(self) -> &'static str {
        match self {
            AdminAction::Set(_) => "set",
            AdminAction::Add(_) => "add",
            AdminAction::Deduct(_) => "deduct",
            AdminAction::SetUnlimited(_) => "set_unlimited",
        }
    }

    /// Checks the amount's bounds for this action.
    pub fn validate(self) -> Result<(), QuotaError> {
        let max = limits::AMOUNT_ABS_MAX;
        let (amount, lo) = match self {
            AdminAction::Set(a) => (a, 0),
            AdminAction::Add(a) => (a, -max),
            AdminAction::Deduct(a) => (a, 1),
            AdminAction::SetUnlimited(_) => return Ok(()),
        };
        if (lo..=max).contains(&amount) {
            Ok(())
        } else {
            Err(QuotaError::invalid(
                "amount",
                format!(
                    "must be between {lo} and {max} for `{}`, got {amount}",
                    self.name()
                ),
            ))
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdminRequest {
    pub username: String,
    pub action: AdminAction,
    pub description: Option<String>,
    /// With `add`: the credit is a dated grant expiring then; with `set`: the new credit is.
    pub expires_at: Option<Timestamp>,
}

/// `{username, balance, action, amount}`, plus `unlimited` for `set_unlimited` (amount null).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AdminResult {
    pub username: String,
    pub balance: i64,
    pub action: &'static str,
    pub amount: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unlimited: Option<bool>,
}

fn check_description(d: Option<&str>) -> Result<String, QuotaError> {
    let d = d.unwrap_or("");
    if d.chars().count() > limits::DESCRIPTION_CHARS_MAX {
        return Err(QuotaError::invalid(
            "description",
            format!("must be at most {} characters", limits::DESCRIPTION_CHARS_MAX),
        ));
    }
    Ok(d.to_string())
}

/// Applies one admin change made by `caller`. Creates the record (balance 0) if there is none.
pub fn admin_update(
    tx: &mut EngineCall<'_>,
    req: &AdminRequest,
    caller: &str,
    now: Timestamp,
) -> Result<AdminResult, QuotaError> {
    let username = normalize_username("username", &req.username)?;
    let mut user = ledger::user_or_new(tx.store(), &username, now)?;
    let balance = apply_checked(
        tx,
        &mut user,
        req.action,
        req.description.clone(),
        req.expires_at,
        caller,
        now,
    )?;
    Ok(AdminResult {
        username: user.username,
        balance,
        action: req.action.name(),
        amount: match req.action {
            AdminAction::Set(a) | AdminAction::Add(a) | AdminAction::Deduct(a) => Some(a),
            AdminAction::SetUnlimited(_) => None,
        },
        unlimited: match req.action {
            AdminAction::SetUnlimited(f) => Some(f),
            _ => None,
        },
    })
}

/// Checks an admin action (amount, description, expiry: each a 400 naming its field) and applies
/// it to `account` (a user's or a budget's); answers the new balance.
pub fn apply_checked<A: Account + ?Sized>(
    tx: &mut EngineCall<'_>,
    account: &mut A,
    action: AdminAction,
    description: Option<String>,
    expires_at: Option<Timestamp>,
    caller: &str,
    now: Timestamp,
) -> Result<i64, QuotaError> {
    action.validate()?;
    let description = check_description(description.as_deref())?;
    let expires_at = match (expires_at, action) {
        (None, _) => None,
        (Some(at), AdminAction::Add(a)) => {
            if a <= 0 {
                return Err(QuotaError::invalid(
                    "amount",
                    format!("must be more than 0 for a dated grant (with `expires_at`), got {a}"),
                ));
            }
            Some(lots::check_expires_at("expires_at", at, now)?)
        }
        (Some(at), AdminAction::Set(_)) => Some(lots::check_expires_at("expires_at", at, now)?),
        (Some(_), other) => {
            return Err(QuotaError::invalid(
                "expires_at",
                format!("is only used with action `add` or `set`, not `{}`", other.name()),
            ))
        }
    };
    apply_action(tx, account, action, expires_at, description, caller, now)
}

pub(super) fn apply_action<A: Account + ?Sized>(
    tx: &mut EngineCall<'_>,
    account: &mut A,
    action: AdminAction,
    expires_at: Option<Timestamp>,
    description: String,
    caller: &str,
    now: Timestamp,
) -> Result<i64, QuotaError> {
    // Decided on the balance as of now (due expiries left out), before anything is written: a
    // refused action writes nothing, the expiries included.
    let key = account.key();
    let held = tx.account_grants(&key)?;
    let effective = lots::balance_at(account.balance(), &held, now);
    let cur = i128::from(effective);
    let (kind, new_balance) = match action {
        AdminAction::Set(a) => (TransactionType::Set, i128::from(a)),
        AdminAction::Add(a) => (TransactionType::Add, cur + i128::from(a)),
        AdminAction::Deduct(a) => {
            if effective < a {
                return Err(QuotaError::InsufficientBalance);
            }
            (TransactionType::Deduct, cur - i128::from(a))
        }
        AdminAction::SetUnlimited(flag) => {
            account.set_unlimited(flag);
            let kind = if flag {
                TransactionType::SetUnlimited
            } else {
                TransactionType::UnsetUnlimited
            };
            (kind, cur)
        }
    };
    let new_balance = ledger::checked_balance(new_balance, "This change")?;
    // The account's due expiries are written first, dated at their expiries.
    let live = grants::settle_with(tx, account, held, now)?;
    let entry = Entry {
        kind,
        resource_type: None,
        description,
        created_by: Some(caller),
        expires_at: None,
    };
    match (action, expires_at) {
        (AdminAction::Add(a), Some(at)) => {
            grants::grant(tx, account, a, at, entry, now)?;
        }
        (AdminAction::Set(a), at) => {
            // The whole credit is replaced: no grant keeps anything; the new credit is one grant
            // (dated) or the undated lot.
            grants::drop_all(tx, &live)?;
            let dated = at.filter(|_| a > 0);
            let entry = Entry {
                expires_at: dated,
                ..entry
            };
            ledger::apply(tx, account, new_balance, entry, now)?;
            if let Some(at) = dated {
                tx.insert_grant(
                    &key,
                    &NewGrant {
                        amount: a,
                        granted_at: now,
                        expires_at: at,
                    },
                )?;
            }
        }
        (AdminAction::Add(a), None) if a < 0 => {
            grants::draw(tx.store(), &live, -a, now)?;
            ledger::apply(tx, account, new_balance, entry, now)?;
        }
        (AdminAction::Deduct(a), _) => {
            grants::draw(tx.store(), &live, a, now)?;
            ledger::apply(tx, account, new_balance, entry, now)?;
        }
        _ => ledger::apply(tx, account, new_balance, entry, now)?,
    }
    Ok(account.balance())
}

/// What `action` would add to `account`'s credit as of now (an `add`, a `set` above the balance as
/// of now): read only, nothing written; 0 for what adds nothing, or what the change itself will
/// refuse as bad input. Course staff's allowance is decided on it (`staff_allowance`).
pub fn addition<A: Account + ?Sized>(
    tx: &mut EngineCall<'_>,
    account: &A,
    action: AdminAction,
    now: Timestamp,
) -> Result<i64, QuotaError> {
    if action.validate().is_err() {
        return Ok(0);
    }
    match action {
        AdminAction::Add(a) => Ok(a.max(0)),
        AdminAction::Set(a) => {
            let held = tx.account_grants(&account.key())?;
            let effective = lots::balance_at(account.balance(), &held, now);
            Ok(a.saturating_sub(effective).max(0))
        }
        AdminAction::Deduct(_) | AdminAction::SetUnlimited(_) => Ok(0),
    }
}

/// [`addition`] to user `username`'s own credit (a user without a record has 0).
pub fn addition_to_user(
    tx: &mut EngineCall<'_>,
    username: &str,
    action: AdminAction,
    now: Timestamp,
) -> Result<i64, QuotaError> {
    let Ok(name) = normalize_username("username", username) else {
        return Ok(0);
    };
    let user = ledger::user_or_new(tx.store(), &name, now)?;
    addition(tx, &user, action, now)
}
