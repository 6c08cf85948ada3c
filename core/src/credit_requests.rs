//! Credit requests (issue 48): a user asks for credit on their own account or a budget they are a
//! member of; a quota admin or the account's course staff approves (the grant and the decision in
//! one call: a decided request is a 409, so a retried approval applies once) or denies with a note.
//! Each step is an event (`request.created`, `request.decided`) the user and webhooks see.

use serde_json::json;

use crate::admin::{self, AdminAction, AdminRequest};
use crate::budgets;
use crate::config::Config;
use crate::engine_call::EngineCall;
use crate::error::QuotaError;
use crate::events::about_user;
use crate::groups;
use crate::limits;
use crate::names::normalize_username;
use crate::store::{CreditRequest, EventKind, RequestStatus};
use crate::time::Timestamp;

/// What a user asks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ask {
    pub amount: i64,
    pub budget: Option<String>,
    pub reason: String,
}

/// A decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// `amount`: at most what was asked (`None`: all of it); `expires_at`: a dated grant.
    Approve {
        amount: Option<i64>,
        expires_at: Option<Timestamp>,
        note: Option<String>,
    },
    Deny {
        note: String,
    },
}

/// The account a request is for, in words.
fn account(budget: Option<&str>) -> String {
    budget.map_or("your own credit".to_string(), |b| format!("budget {b}"))
}

/// A text of 1 to `max` characters after trimming, or the 400 naming `field`.
pub fn text(field: &str, raw: &str, max: usize) -> Result<String, QuotaError> {
    let t = raw.trim();
    if t.is_empty() || t.chars().count() > max {
        return Err(QuotaError::invalid(
            field,
            format!("must be 1 to {max} characters"),
        ));
    }
    Ok(t.to_string())
}

/// `POST .../me/requests`: `username` asks; the request as stored.
pub fn create(
    config: &Config,
    tx: &mut EngineCall<'_>,
    username: &str,
    ask: &Ask,
    now: Timestamp,
) -> Result<CreditRequest, QuotaError> {
    let username = normalize_username("username", username)?;
    if !(1..=config.request_max_amount).contains(&ask.amount) {
        return Err(QuotaError::invalid(
            "amount",
            format!(
                "must be a whole number of credits from 1 to {}, got {}",
                config.request_max_amount, ask.amount
            ),
        ));
    }
    let reason = text("reason", &ask.reason, limits::REQUEST_REASON_CHARS_MAX)?;
    if let Some(name) = &ask.budget {
        let Some(b) = budgets::find(config, tx.store(), name)? else {
            return Err(QuotaError::invalid("budget", format!("unknown budget {name}")));
        };
        let mine = groups::of(tx.store(), &username)?;
        if !b.def.is_member(&username, &mine) {
            return Err(QuotaError::invalid(
                "budget",
                format!("you are not a member of budget {name}"),
            ));
        }
    }
    if let Some(p) = tx.pending_request(&username, ask.budget.as_deref())? {
        return Err(QuotaError::Conflict(format!(
            "budget: you already have a pending request for {} (request {}); wait for its decision",
            account(ask.budget.as_deref()),
            p.id
        )));
    }
    let mut r = CreditRequest {
        id: 0,
        username: username.clone(),
        budget: ask.budget.clone(),
        amount: ask.amount,
        reason,
        status: RequestStatus::Pending,
        created_at: now,
        decided_at: None,
        decided_by: None,
        granted: None,
        expires_at: None,
        note: None,
    };
    r.id = tx.insert_request(&r)?;
    tx.note(about_user(
        EventKind::RequestCreated,
        &username,
        r.budget.as_deref(),
        json!({ "request_id": r.id, "amount": r.amount, "reason": r.reason }),
        now,
    ));
    Ok(r)
}

/// A request by id, or the 404.
pub fn get(tx: &mut EngineCall<'_>, id: i64) -> Result<CreditRequest, QuotaError> {
    tx.get_request(id)?
        .ok_or_else(|| QuotaError::NotFound(format!("Credit request {id} not found")))
}

/// `POST .../admin/api/quota/requests/<id>`: `decider` decides request `r` (the caller checked
/// they may); an approval writes the grant in the same call.
pub fn decide(
    config: &Config,
    tx: &mut EngineCall<'_>,
    mut r: CreditRequest,
    decision: &Decision,
    decider: &str,
    now: Timestamp,
) -> Result<CreditRequest, QuotaError> {
    if r.status != RequestStatus::Pending {
        return Err(QuotaError::Conflict(format!(
            "Credit request {} was already {} by {} at {}; nothing was changed",
            r.id,
            r.status.as_str(),
            r.decided_by.as_deref().unwrap_or("?"),
            r.decided_at.map(|t| t.to_string()).unwrap_or_default()
        )));
    }
    match decision {
        Decision::Approve {
            amount,
            expires_at,
            note,
        } => {
            let granted = amount.unwrap_or(r.amount);
            if !(1..=r.amount).contains(&granted) {
                return Err(QuotaError::invalid(
                    "amount",
                    format!("must be from 1 to {} (what was asked), got {granted}", r.amount),
                ));
            }
            let note = note
                .as_deref()
                .map(|n| text("note", n, limits::REQUEST_NOTE_CHARS_MAX))
                .transpose()?;
            let description = Some(format!("Credit request {}", r.id));
            match &r.budget {
                None => {
                    let req = AdminRequest {
                        username: r.username.clone(),
                        action: AdminAction::Add(granted),
                        description,
                        expires_at: *expires_at,
                    };
                    admin::admin_update(tx, &req, decider, now)?;
                }
                Some(b) => {
                    budgets::change(
                        config,
                        tx,
                        b,
                        (AdminAction::Add(granted), description, *expires_at),
                        decider,
                        now,
                    )?;
                }
            }
            r.status = RequestStatus::Approved;
            r.granted = Some(granted);
            r.expires_at = *expires_at;
            r.note = note;
        }
        Decision::Deny { note } => {
            r.status = RequestStatus::Denied;
            r.note = Some(text("note", note, limits::REQUEST_NOTE_CHARS_MAX)?);
        }
    }
    r.decided_at = Some(now);
    r.decided_by = Some(decider.to_string());
    tx.put_decision(&r)?;
    tx.note(about_user(
        EventKind::RequestDecided,
        &r.username,
        r.budget.as_deref(),
        json!({
            "request_id": r.id,
            "status": r.status.as_str(),
            "amount": r.amount,
            "granted": r.granted,
            "expires_at": r.expires_at,
            "note": r.note,
            "decided_by": r.decided_by,
        }),
        now,
    ));
    Ok(r)
}
