//! The spawn gate: may this user start this server now? What it is asked and answers is
//! `types.rs`, its refusal texts `refusal.rs`.

mod refusal;
mod types;

pub use refusal::forbidden_message;
pub(crate) use refusal::{personal_refusal, Ask};
pub use types::{Estimate, Refusal, StartDecision, StartRequest, Started};

use crate::accelerators::CPU_RESOURCE;
use crate::budgets;
use crate::config::Config;
use crate::error::QuotaError;
use crate::groups::{self, GroupNames};
use crate::ledger::{self, Entry};
use crate::limits;
use crate::lots;
use crate::milli::Milli;
use crate::names::{normalize_username, validate_server_name};
use crate::observations::{GateResult, Observation};
use crate::sessions;
use crate::store::{AccountKey, NewSession, SessionStatus, TransactionType, UserRecord};
use crate::time::Timestamp;
use crate::tx::Tx;

/// What a start of `resource` (`cpu` or an accelerator key) for `runtime_minutes` would cost, with
/// the gate's own checks of both: the spawn form shows exactly what the gate then holds.
pub fn estimate(config: &Config, resource: &str, runtime_minutes: i64) -> Result<Estimate, QuotaError> {
    if !(limits::RUNTIME_MINUTES_MIN..=limits::RUNTIME_MINUTES_MAX).contains(&runtime_minutes) {
        return Err(QuotaError::invalid(
            "runtime_minutes",
            format!(
                "must be a whole number of minutes from {} to {}, got {}",
                limits::RUNTIME_MINUTES_MIN,
                limits::RUNTIME_MINUTES_MAX,
                runtime_minutes
            ),
        ));
    }
    let rate = config.rate_of(resource).ok_or_else(|| {
        let known: Vec<&str> = std::iter::once(CPU_RESOURCE)
            .chain(config.accelerators.keys().map(String::as_str))
            .collect();
        QuotaError::invalid(
            "resource_type",
            format!("unknown accelerator `{resource}` (known: {})", known.join(", ")),
        )
    })?;
    // rate <= rate_max and minutes <= 480, so this cannot overflow.
    let estimated_cost = rate.times(runtime_minutes).unwrap_or(Milli(i64::MAX));
    Ok(Estimate { rate, estimated_cost })
}

/// Validates a start request, closes an orphaned session of the same server, creates the user's
/// record on the first attempt, and decides. The decision is recorded as an [`Observation::Gate`].
pub fn check_start(
    config: &Config,
    tx: &mut Tx<'_>,
    req: &StartRequest,
    now: Timestamp,
) -> Result<StartDecision, QuotaError> {
    let decision = decide(config, tx, req, now);
    let result = match &decision {
        Ok(StartDecision::Allowed(_)) => GateResult::Allowed,
        Ok(StartDecision::Refused(_)) => GateResult::Refused,
        Ok(StartDecision::Forbidden(_)) => GateResult::Forbidden,
        Err(QuotaError::Invalid { .. } | QuotaError::OutOfRange(_)) => GateResult::Invalid,
        Err(_) => return decision,
    };
    tx.observe(Observation::Gate {
        result,
        resource_type: resource_label(config, req.resource.as_deref()),
    });
    if let Ok(StartDecision::Refused(Refusal { message, .. }) | StartDecision::Forbidden(message)) = &decision
    {
        note_refusal(tx, req, message, now);
    }
    decision
}

/// A `start.refused` event: who, which server and resource, and the 403 text.
fn note_refusal(tx: &mut Tx<'_>, req: &StartRequest, message: &str, now: Timestamp) {
    let Ok(username) = normalize_username("username", &req.username) else {
        return;
    };
    let data = serde_json::json!({
        "status": 403,
        "message": message,
        "server_name": req.server_name,
        "resource_type": req.resource.as_deref().unwrap_or(CPU_RESOURCE),
    });
    tx.note(crate::events::about_user(
        crate::store::EventKind::StartRefused,
        &username,
        req.budget.as_deref(),
        data,
        now,
    ));
}

/// A resource type as a metrics label: a configured one, or `other` (a client's free text must not
/// become a label of its own).
pub fn resource_label(config: &Config, resource: Option<&str>) -> String {
    match resource.unwrap_or(CPU_RESOURCE) {
        r if r == CPU_RESOURCE || config.accelerators.contains_key(r) => r.to_string(),
        _ => "other".to_string(),
    }
}

fn decide(
    config: &Config,
    tx: &mut Tx<'_>,
    req: &StartRequest,
    now: Timestamp,
) -> Result<StartDecision, QuotaError> {
    let username = normalize_username("username", &req.username)?;
    let server_name = validate_server_name("server_name", &req.server_name)?;
    let resource = req.resource.as_deref().unwrap_or(CPU_RESOURCE);
    let Estimate { rate, estimated_cost } = estimate(config, resource, req.runtime_minutes)?;
    let start = req.started_at.unwrap_or(now);
    // Check 1 of a start charging a budget: it exists (a 400, like every bad field).
    let budget = match &req.budget {
        None => None,
        Some(name) => Some(
            budgets::find(config, tx.store(), name)?
                .ok_or_else(|| QuotaError::invalid("budget", format!("unknown budget {name}")))?,
        ),
    };

    // One read serves the stored groups, the orphan check, the record and the reservations. The
    // stored groups are read when the start needs them, and when groups are reported (written only
    // when they differ: a host reporting the same groups at every start costs no statement more).
    // A budget's membership needs the groups only when the user is not listed by name.
    let need_groups = config.groups.matter_for_start()
        || budget
            .as_ref()
            .is_some_and(|b| !b.def.groups.is_empty() && !b.def.users.contains(&username));
    let state = tx.gate_state(&username, need_groups || req.groups.is_some())?;
    // Groups as one text each (GroupNames): a report is compared with the stored text, and
    // checked only when it differs; neither is taken apart. Unread, the stored ones are none.
    let stored_groups = state.groups.unwrap_or_default();
    let changed = match &req.groups {
        Some(r) => r.changed_from("groups", &stored_groups)?,
        None => None,
    };
    let groups = changed.as_ref().unwrap_or(&stored_groups);

    // Group access first: a forbidden start records nothing (not even the reported groups).
    if !config.groups.may_start(resource, groups) {
        return Ok(StartDecision::Forbidden(forbidden_message(config, resource)));
    }
    if let Some(g) = &changed {
        groups::report(tx.store(), &username, &g.to_set(), now)?;
    }

    // A hub starts only a server that is not running: an active session of this server is an orphan.
    let (stored_user, mut active) = (state.user, state.active);
    let mut orphan_closed = false;
    if let Some(pos) = active.iter().position(|s| s.server_name == server_name) {
        orphan_closed = true;
        let orphan = active.remove(pos);
        let limit_end = orphan.start_time.plus_seconds(orphan.runtime_minutes * 60);
        let end = start.min(limit_end);
        let minutes =
            sessions::billed_minutes(end.seconds() - orphan.start_time.seconds()).min(orphan.runtime_minutes);
        sessions::close(
            tx,
            orphan,
            Some(stored_user.clone()),
            end,
            minutes,
            SessionStatus::Completed,
            now,
        )?;
    }

    let mut user: Option<UserRecord> = None;
    let mut billable = false;
    let mut budget_balance: Option<i64> = None;
    if config.enabled {
        // Closing an orphan may have charged the user: re-read only in that case.
        let current = if orphan_closed {
            tx.get_user(&username)?
        } else {
            stored_user
        };
        let mut u = match current {
            Some(u) => u,
            None => create_record(config, tx, &username, groups, now)?,
        };
        if let Some(b) = &budget {
            // Checks 2 to 5; an unlimited user charging a budget is charged.
            let ask = budgets::BudgetStart {
                budget: b,
                username: &username,
                groups,
                resource,
                rate,
                runtime_minutes: req.runtime_minutes,
                estimated_cost,
                // The member's share, from the user's running sessions read above.
                member_held: Some(
                    active
                        .iter()
                        .filter(|s| s.billable && s.budget.as_deref() == Some(b.name.as_str()))
                        .map(|s| s.estimated_cost.raw())
                        .sum(),
                ),
                lock: true,
            };
            match budgets::check_start(config, tx.store(), &ask, now)? {
                Err(budgets::BudgetRefusal::Forbidden(m)) => return Ok(StartDecision::Forbidden(m)),
                Err(budgets::BudgetRefusal::Refused(r)) => {
                    return Ok(StartDecision::Refused(Refusal {
                        message: r.message,
                        balance: r.balance,
                        held: r.held,
                        estimated_cost: r.estimated_cost,
                        next_refresh: None,
                    }))
                }
                Ok(balance) => {
                    billable = true;
                    budget_balance = Some(balance);
                }
            }
        } else {
            // The balance as of now: a dated grant whose expiry has come no longer counts (its
            // `expire` transaction is written by the next write to the account, not by a start).
            let held_grants = tx.account_grants(&AccountKey::User(username.clone()))?;
            u.balance = lots::balance_at(u.balance, &held_grants, now);
            if !u.unlimited {
                let held: i64 = active
                    .iter()
                    .filter(|s| s.billable && s.budget.is_none())
                    .map(|s| s.estimated_cost.raw())
                    .sum();
                crate::invariants::held(held);
                let ask = Ask {
                    rate,
                    runtime_minutes: req.runtime_minutes,
                    estimated_cost,
                    held,
                };
                if let Some(r) =
                    personal_refusal(config, tx.store(), req.groups.is_some(), &u, groups, &ask, now)?
                {
                    return Ok(StartDecision::Refused(r));
                }
                billable = true;
            }
            user = Some(u);
        }
    }

    // The answer's balance is the paying account's, as of now (quota disabled: the budget was
    // validated and nothing is billed).
    let balance = match (budget_balance, &budget, user) {
        (Some(b), _, _) => b,
        (None, Some(b), _) => budgets::balance_and_held(tx.store(), &b.name, now)?.0,
        (None, None, Some(u)) => u.balance,
        (None, None, None) => tx.get_user(&username)?.map_or(0, |u| u.balance),
    };
    let session = NewSession {
        username,
        server_name,
        resource_type: resource.to_string(),
        rate,
        runtime_minutes: req.runtime_minutes,
        estimated_cost,
        start_time: start,
        billable,
        budget: budget.map(|b| b.name),
        warn_at: crate::events::sweep::first_session_warning(
            config,
            start.plus_seconds(req.runtime_minutes * 60),
        ),
    };
    let session_id = tx.insert_session(&session)?;
    // The session's strings move into the answer: no copies on the hot path.
    Ok(StartDecision::Allowed(Started {
        session_id,
        username: session.username,
        server_name: session.server_name,
        resource_type: session.resource_type,
        rate,
        runtime_minutes: req.runtime_minutes,
        estimated_cost,
        balance,
        status: SessionStatus::Active,
        budget: session.budget,
    }))
}

/// The first start attempt ever for a username: its record, with `defaultQuota` granted once.
fn create_record(
    config: &Config,
    tx: &mut Tx<'_>,
    username: &str,
    groups: &GroupNames,
    now: Timestamp,
) -> Result<UserRecord, QuotaError> {
    let grant = config.groups.default_quota(groups.iter(), config.default_quota);
    let mut u = UserRecord {
        username: username.to_string(),
        balance: 0,
        unlimited: false,
        updated_at: now,
    };
    if grant > 0 {
        let entry = Entry {
            kind: TransactionType::InitialGrant,
            resource_type: None,
            description: "Default quota for new user".to_string(),
            created_by: None,
            expires_at: None,
        };
        ledger::apply(tx, &mut u, grant, entry, now)?;
    } else {
        tx.put_user(&u)?;
    }
    Ok(u)
}
