//! How the gate decides a start, in four visible steps:
//! 1. **read**: the request checked ([`Asked::of`]), the budget it names, and one read of the
//!    user's state (record, running sessions, stored groups when they matter) ([`read`]);
//! 2. **settle**: what every start attempt writes whatever the answer (the reported groups when
//!    they changed, an orphaned session of the same server closed, the first record with its
//!    default quota) ([`settle`]);
//! 3. **decide**: the paying account as of now against the start's price (`account::decide`)
//!    ([`pay`]);
//! 4. **write**: the session, whose estimated cost is then the account's reservation ([`write`]).
//!
//! A forbidden start (an accelerator of other groups) is decided between 1 and 2 and writes
//! nothing.

use super::price::estimate;
use super::refusal::{forbidden_message, personal_refusal};
use super::start::{Estimate, Refusal, StartDecision, StartRequest, Started};
use crate::accelerators::CPU_RESOURCE;
use crate::account::{held_on_budget, AccountView, Price};
use crate::budgets::{self, Budget};
use crate::config::Config;
use crate::engine_call::EngineCall;
use crate::error::QuotaError;
use crate::groups::{self, GroupNames};
use crate::ledger::{self, Entry};
use crate::names::{normalize_username, validate_server_name};
use crate::sessions;
use crate::store::{AccountKey, NewSession, Session, SessionStatus, TransactionType, UserRecord};
use crate::time::Timestamp;

/// A start request, checked: its names, resource and price.
struct Asked<'a> {
    username: String,
    server_name: String,
    resource: &'a str,
    price: Price,
    start: Timestamp,
}

impl<'a> Asked<'a> {
    fn of(config: &Config, req: &'a StartRequest, now: Timestamp) -> Result<Asked<'a>, QuotaError> {
        let username = normalize_username("username", &req.username)?;
        let server_name = validate_server_name("server_name", &req.server_name)?;
        let resource = req.resource.as_deref().unwrap_or(CPU_RESOURCE);
        let Estimate { rate, estimated_cost } = estimate(config, resource, req.runtime_minutes)?;
        Ok(Asked {
            username,
            server_name,
            resource,
            price: Price {
                rate,
                minutes: req.runtime_minutes,
                cost: estimated_cost,
            },
            start: req.started_at.unwrap_or(now),
        })
    }
}

/// What the gate read of the user: their record, running sessions and groups (the reported ones
/// when they differ from the stored ones: `changed`).
struct Read {
    user: Option<UserRecord>,
    active: Vec<Session>,
    groups: GroupNames,
    /// The host reported the user's groups with the request.
    reported: bool,
    changed: bool,
}

/// How the start is paid for, once decided: billable or not, the budget charged, and the paying
/// account's balance as of now for the answer.
struct Paid {
    billable: bool,
    balance: i64,
}

pub(super) fn decide(
    config: &Config,
    tx: &mut EngineCall<'_>,
    req: &StartRequest,
    now: Timestamp,
) -> Result<StartDecision, QuotaError> {
    let asked = Asked::of(config, req, now)?;
    // Check 1 of a start charging a budget: it exists (a 400, like every bad field).
    let budget = match &req.budget {
        None => None,
        Some(name) => Some(
            budgets::find(config, tx.store(), name)?
                .ok_or_else(|| QuotaError::invalid("budget", format!("unknown budget {name}")))?,
        ),
    };
    let mut read = read(config, tx, req, &asked, budget.as_ref())?;
    // Group access first: a forbidden start records nothing (not even the reported groups).
    if !config.groups.may_start(asked.resource, &read.groups) {
        return Ok(StartDecision::Forbidden(forbidden_message(
            config,
            asked.resource,
        )));
    }
    let user = settle(config, tx, &asked, &mut read, now)?;
    let paid = match pay(config, tx, &asked, &read, user, budget.as_ref(), now)? {
        Ok(paid) => paid,
        Err(answer) => return Ok(answer),
    };
    write(config, tx, asked, budget.map(|b| b.name), paid)
}

/// Step 1: one read of the user's state. The stored groups are read when the start needs them,
/// and when groups are reported (written only when they differ: a host reporting the same groups
/// at every start costs no statement more). A budget's membership needs the groups only when the
/// user is not listed by name.
fn read(
    config: &Config,
    tx: &mut EngineCall<'_>,
    req: &StartRequest,
    asked: &Asked<'_>,
    budget: Option<&Budget>,
) -> Result<Read, QuotaError> {
    let need_groups = config.groups.matter_for_start()
        || budget.is_some_and(|b| !b.def.groups.is_empty() && !b.def.users.contains(&asked.username));
    let state = tx.gate_state(&asked.username, need_groups || req.groups.is_some())?;
    // Groups as one text each (GroupNames): a report is compared with the stored text, and
    // checked only when it differs; neither is taken apart. Unread, the stored ones are none.
    let stored = state.groups.unwrap_or_default();
    let changed = match &req.groups {
        Some(r) => r.changed_from("groups", &stored)?,
        None => None,
    };
    Ok(Read {
        user: state.user,
        active: state.active,
        reported: req.groups.is_some(),
        changed: changed.is_some(),
        groups: changed.unwrap_or(stored),
    })
}

/// Step 2: what every allowed-to-ask start writes, whatever the decision: the reported groups
/// when they changed, an orphaned session of the same server closed (a hub starts only a server
/// that is not running), and with quota on, the user's record (the first attempt creates it with
/// its default quota). Returns the record as it now stands (None: quota disabled).
fn settle(
    config: &Config,
    tx: &mut EngineCall<'_>,
    asked: &Asked<'_>,
    read: &mut Read,
    now: Timestamp,
) -> Result<Option<UserRecord>, QuotaError> {
    if read.changed {
        groups::report(tx.store(), &asked.username, &read.groups.to_set(), now)?;
    }
    let mut orphan_closed = false;
    if let Some(pos) = read
        .active
        .iter()
        .position(|s| s.server_name == asked.server_name)
    {
        orphan_closed = true;
        let orphan = read.active.remove(pos);
        let limit_end = orphan.start_time.plus_seconds(orphan.runtime_minutes * 60);
        let end = asked.start.min(limit_end);
        let minutes =
            sessions::billed_minutes(end.seconds() - orphan.start_time.seconds()).min(orphan.runtime_minutes);
        sessions::close(
            tx,
            orphan,
            Some(read.user.clone()),
            end,
            minutes,
            SessionStatus::Completed,
            now,
        )?;
    }
    if !config.enabled {
        return Ok(None);
    }
    // Closing an orphan may have charged the user: re-read only in that case.
    let current = if orphan_closed {
        tx.get_user(&asked.username)?
    } else {
        read.user.take()
    };
    Ok(Some(match current {
        Some(u) => u,
        None => create_record(config, tx, &asked.username, &read.groups, now)?,
    }))
}

/// Step 3: may the paying account take the start now? A budget: checks 2 to 5 (membership, what
/// it pays for, its credit, the member's limit); the personal account: its view as of now, unless
/// unlimited. Quota disabled: nothing is billed. `Err`: the answer (a refusal), nothing more to
/// write.
fn pay(
    config: &Config,
    tx: &mut EngineCall<'_>,
    asked: &Asked<'_>,
    read: &Read,
    user: Option<UserRecord>,
    budget: Option<&Budget>,
    now: Timestamp,
) -> Result<Result<Paid, StartDecision>, QuotaError> {
    let Some(user) = user else {
        // Quota disabled: the budget was validated and nothing is billed; the answer shows the
        // paying account's balance as of now.
        let balance = match budget {
            Some(b) => budgets::balance_and_held(tx.store(), &b.name, now)?.0,
            None => tx.get_user(&asked.username)?.map_or(0, |u| u.balance),
        };
        return Ok(Ok(Paid {
            billable: false,
            balance,
        }));
    };
    if let Some(b) = budget {
        // An unlimited user charging a budget is charged.
        let ask = budgets::BudgetStart {
            budget: b,
            username: &asked.username,
            groups: &read.groups,
            resource: asked.resource,
            price: asked.price,
            // The member's share, from the user's running sessions read above.
            member_held: Some(held_on_budget(&read.active, &b.name, None)),
            lock: true,
        };
        return Ok(match budgets::check_start(config, tx.store(), &ask, now)? {
            Err(budgets::BudgetRefusal::Forbidden(m)) => Err(StartDecision::Forbidden(m)),
            Err(budgets::BudgetRefusal::Refused(r)) => Err(StartDecision::Refused(Refusal {
                message: r.message,
                balance: r.balance,
                held: r.held,
                estimated_cost: r.estimated_cost,
                next_refresh: None,
            })),
            Ok(balance) => Ok(Paid {
                billable: true,
                balance,
            }),
        });
    }
    let grants = tx.account_grants(&AccountKey::User(asked.username.clone()))?;
    let view = AccountView::of(Some(user), &grants, &read.active, now);
    let balance = view.balance();
    if view.unlimited() {
        return Ok(Ok(Paid {
            billable: false,
            balance,
        }));
    }
    let u = view.record.as_ref().expect("the view of a record");
    // The groups the gate has all of: read for the start, or reported by the host.
    let known = (read.reported || config.groups.matter_for_start()).then_some(&read.groups);
    if let Some(r) = personal_refusal(config, tx.store(), u, known, asked.price, view.held, now)? {
        return Ok(Err(StartDecision::Refused(r)));
    }
    Ok(Ok(Paid {
        billable: true,
        balance,
    }))
}

/// Step 4: the session. The session's strings move into the answer: no copies on the hot path.
fn write(
    config: &Config,
    tx: &mut EngineCall<'_>,
    asked: Asked<'_>,
    budget: Option<String>,
    paid: Paid,
) -> Result<StartDecision, QuotaError> {
    let Price { rate, minutes, cost } = asked.price;
    let ends_at = asked.start.plus_seconds(minutes * 60);
    let session = NewSession {
        username: asked.username,
        server_name: asked.server_name,
        resource_type: asked.resource.to_string(),
        rate,
        runtime_minutes: minutes,
        estimated_cost: cost,
        start_time: asked.start,
        billable: paid.billable,
        budget,
        warn_at: crate::events::sweep::first_session_warning(config, ends_at),
    };
    let session_id = tx.insert_session(&session)?;
    Ok(StartDecision::Allowed(Started {
        session_id,
        username: session.username,
        server_name: session.server_name,
        resource_type: session.resource_type,
        rate,
        runtime_minutes: minutes,
        estimated_cost: cost,
        balance: paid.balance,
        status: SessionStatus::Active,
        budget: session.budget,
        ends_at,
    }))
}

/// The first start attempt ever for a username: its record, with `defaultQuota` granted once.
fn create_record(
    config: &Config,
    tx: &mut EngineCall<'_>,
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
