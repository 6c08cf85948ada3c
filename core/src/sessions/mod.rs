//! Ending usage sessions: billing at stop, the `failed` outcome, idempotent ends, and stale cleanup.

mod billing;
mod views;

pub use billing::billed_minutes;
pub use views::{MySession, SessionView};

use serde::Serialize;

use crate::engine_call::EngineCall;
use crate::error::QuotaError;
use crate::ledger::{self, Account, Entry};
use crate::limits;
use crate::names::{normalize_username, validate_server_name};
use crate::observations::Observation;
use crate::store::{Session, SessionStatus, TransactionType, UserRecord};
use crate::time::Timestamp;

/// Which session to end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EndTarget {
    Id(i64),
    /// The active session of a user's server, for a hub that lost the id.
    Server {
        username: String,
        server_name: String,
    },
}

/// How the session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The server ran and stopped: billed.
    Completed,
    /// The spawn failed before the server was ready: not billed.
    Failed,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndRequest {
    pub target: EndTarget,
    /// When the server stopped; `now` when absent.
    pub ended_at: Option<Timestamp>,
    pub outcome: Outcome,
}

/// The wire form of an ended session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EndResult {
    pub session_id: i64,
    pub status: SessionStatus,
    pub duration_minutes: i64,
    /// Credits charged (positive; 0 when not charged).
    pub cost: i64,
    pub balance: i64,
}

pub fn end_session(
    tx: &mut EngineCall<'_>,
    req: &EndRequest,
    now: Timestamp,
) -> Result<EndResult, QuotaError> {
    // One read serves the session and its user's record (the charge's account).
    let (session, user) = match &req.target {
        EndTarget::Id(id) => tx
            .session_and_user(*id)?
            .ok_or_else(|| QuotaError::NotFound(format!("Session {id} not found")))?,
        EndTarget::Server {
            username,
            server_name,
        } => {
            let username = normalize_username("username", username)?;
            let server_name = validate_server_name("server_name", server_name)?;
            let state = tx.gate_state(&username, false)?;
            let found = state.active.into_iter().find(|s| s.server_name == server_name);
            let session = found.ok_or_else(|| {
                QuotaError::NotFound(format!(
                    "No active session for user {username} server `{server_name}`"
                ))
            })?;
            (session, state.user)
        }
    };
    if session.status != SessionStatus::Active {
        let balance = match &session.budget {
            Some(b) => tx.get_budget(b)?.map_or(0, |r| r.balance),
            None => user.map_or(0, |u| u.balance),
        };
        return Ok(EndResult {
            session_id: session.id,
            status: session.status,
            duration_minutes: session.duration_minutes.unwrap_or(0),
            cost: session.cost,
            balance,
        });
    }
    let end = req.ended_at.unwrap_or(now);
    let minutes = billed_minutes(end.seconds() - session.start_time.seconds());
    let status = match req.outcome {
        Outcome::Completed => SessionStatus::Completed,
        Outcome::Failed => SessionStatus::Failed,
    };
    close(tx, session, Some(user), end, minutes, status, now)
}

/// The active session of (username, server_name), if any.
pub fn find_active(
    tx: &mut EngineCall<'_>,
    username: &str,
    server_name: &str,
) -> Result<Option<Session>, QuotaError> {
    Ok(tx
        .active_sessions(username)?
        .into_iter()
        .find(|s| s.server_name == server_name))
}

/// Ends an active session: records status, end time and minutes, and charges a billable completed
/// session of a user who is not unlimited now. `now` stamps the transaction. `user`: the session's
/// user's record when the caller has just read it (`Some(None)`: no row), else `None` (read here).
pub fn close(
    tx: &mut EngineCall<'_>,
    mut session: Session,
    user: Option<Option<UserRecord>>,
    end: Timestamp,
    minutes: i64,
    status: SessionStatus,
    now: Timestamp,
) -> Result<EndResult, QuotaError> {
    let mut cost = 0;
    let charge_budget = session.billable && status == SessionStatus::Completed;
    let balance = if let Some(name) = session.budget.clone() {
        // A budget's session: the charge goes to the budget (whoever ran it, unlimited or not),
        // drawn in the spending order; the personal balance is untouched.
        let mut acct = crate::budgets::account(tx.store(), &name, &session.username, now)?;
        if charge_budget {
            cost = session_cost(&session, minutes)?;
            charge(tx, &mut acct, &session, minutes, cost, now)?;
        }
        acct.row.balance
    } else {
        let user = match user {
            Some(u) => u,
            None => tx.get_user(&session.username)?,
        };
        let charge_user = charge_budget && !user.as_ref().is_some_and(|u| u.unlimited);
        match user {
            // The row read above (one read per call, not two); a user without a row starts at zero.
            Some(mut u) if charge_user => {
                cost = session_cost(&session, minutes)?;
                charge(tx, &mut u, &session, minutes, cost, now)?;
                u.balance
            }
            None if charge_user => {
                let mut u = ledger::new_user(&session.username, now);
                cost = session_cost(&session, minutes)?;
                charge(tx, &mut u, &session, minutes, cost, now)?;
                u.balance
            }
            Some(u) => u.balance,
            None => 0,
        }
    };
    session.status = status;
    session.end_time = Some(end);
    session.duration_minutes = Some(minutes);
    session.cost = cost;
    tx.update_session(&session)?;
    if status == SessionStatus::Completed {
        let usage = crate::usage::Usage {
            credits: cost,
            minutes,
            sessions: 1,
        };
        let key = crate::store::UsageKey {
            username: &session.username,
            budget: session.budget.as_deref().unwrap_or(""),
            day: crate::usage::day_of(now),
            resource_type: &session.resource_type,
        };
        tx.record_usage(&key, &usage)?;
    }
    note_ended(tx, &session, balance, now);
    tx.observe(Observation::SessionsEnded {
        status,
        resource_type: session.start.resource_type,
        sessions: 1,
        credits: cost,
        budget: session.start.budget,
    });
    Ok(EndResult {
        session_id: session.id,
        status,
        duration_minutes: minutes,
        cost,
        balance,
    })
}

/// A `session.ended` event: the session, how it ended, its cost and the paying account's balance.
fn note_ended(tx: &mut EngineCall<'_>, s: &Session, balance: i64, now: Timestamp) {
    let data = serde_json::json!({
        "session_id": s.id,
        "server_name": s.server_name,
        "status": s.status,
        "cost": s.cost,
        "balance": balance,
    });
    tx.note(crate::events::about_user(
        crate::store::EventKind::SessionEnded,
        &s.username,
        s.budget.as_deref(),
        data,
        now,
    ));
}

/// What `minutes` of `session` cost, rounded up to whole credits.
pub(crate) fn session_cost(session: &Session, minutes: i64) -> Result<i64, QuotaError> {
    let exact = session.rate.times(minutes).ok_or_else(|| {
        QuotaError::OutOfRange(format!(
            "Session {} cost is too large; nothing was changed",
            session.id
        ))
    })?;
    Ok(exact.ceil())
}

/// Charges `cost` to the paying account: decided on its balance as of now before anything is
/// written; then its due expiries (dated at their expiries), and the charge drawn from the grants
/// live now, soonest expiry first, the rest from the undated lot (which may go negative).
fn charge<A: Account + ?Sized>(
    tx: &mut EngineCall<'_>,
    account: &mut A,
    session: &Session,
    minutes: i64,
    cost: i64,
    now: Timestamp,
) -> Result<(), QuotaError> {
    crate::invariants::charge(cost, session.billable);
    let held = tx.account_grants(&account.key())?;
    let effective = crate::lots::balance_at(account.balance(), &held, now);
    let new_balance = ledger::checked_balance(i128::from(effective) - i128::from(cost), "This charge")?;
    let live = crate::grants::settle_with(tx, account, held, now)?;
    crate::grants::draw(tx.store(), &live, cost, now)?;
    let entry = Entry {
        kind: TransactionType::Usage,
        resource_type: Some(&session.resource_type),
        description: format!("Session {}: {} min @ {}/min", session.id, minutes, session.rate),
        created_by: None,
        expires_at: None,
    };
    ledger::apply(tx, account, new_balance, entry, now)?;
    Ok(())
}

/// A session closed by stale cleanup, for the host's log line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CleanedSession {
    pub session_id: i64,
    pub username: String,
    pub server_name: String,
    pub start_time: Timestamp,
    pub duration_minutes: i64,
}

/// Closes every session active for more than 8 hours as `cleaned_up`, without charge.
pub fn cleanup_stale(tx: &mut EngineCall<'_>, now: Timestamp) -> Result<Vec<CleanedSession>, QuotaError> {
    let cutoff = now.plus_seconds(-limits::STALE_AFTER_SECONDS);
    let mut cleaned = Vec::new();
    let mut by_resource: std::collections::BTreeMap<String, u64> = Default::default();
    for mut s in tx.stale_sessions(cutoff)? {
        *by_resource.entry(s.resource_type.clone()).or_default() += 1;
        let minutes = (now.seconds() - s.start_time.seconds()).div_euclid(60);
        s.status = SessionStatus::CleanedUp;
        s.end_time = Some(now);
        s.duration_minutes = Some(minutes);
        s.cost = 0;
        tx.update_session(&s)?;
        let balance = match &s.budget {
            Some(b) => tx.get_budget(b)?.map_or(0, |r| r.balance),
            None => tx.get_user(&s.username)?.map_or(0, |u| u.balance),
        };
        note_ended(tx, &s, balance, now);
        cleaned.push(CleanedSession {
            session_id: s.id,
            username: s.start.username,
            server_name: s.start.server_name,
            start_time: s.start.start_time,
            duration_minutes: minutes,
        });
    }
    for (resource_type, sessions) in by_resource {
        tx.observe(Observation::SessionsEnded {
            status: SessionStatus::CleanedUp,
            resource_type,
            sessions,
            credits: 0,
            budget: None,
        });
    }
    Ok(cleaned)
}
