//! Extending a running server (credit model 2, "Extending a running server"): the extra minutes
//! checked against the account that pays, with the start's rules and texts (the session's own
//! reservation counting as held); allowed, the runtime, the reservation and `ends_at` grow, and
//! the `session.ending` marks now ahead again are re-armed.

use crate::account::{insufficient_text, AccountView, Payer, Paying, Price};
use crate::budgets;
use crate::config::Config;
use crate::error::QuotaError;
use crate::events::sweep::{ends_at, next_warning, still_told};
use crate::gate::{forbidden_message, personal_refusal};
use crate::groups::{self, GroupNames};
use crate::limits;
use crate::milli::Milli;
use crate::sessions::SessionView;
use crate::store::{AccountKey, SessionStatus, Store};
use crate::time::Timestamp;

/// Who asks: a plain user may extend only their own sessions.
pub struct Asker<'a> {
    pub name: &'a str,
    /// The hub (`quota:sessions`) or an admin: any session.
    pub any_session: bool,
}

/// How an extension ended.
pub enum Extended {
    /// The session as `GET .../sessions/<id>` shows it now.
    Done(SessionView),
    /// Refused for credit or access: the 403 text (nothing changed).
    Refused(String),
}

/// Extends session `id` by `minutes`.
pub fn extend(
    config: &Config,
    store: &mut dyn Store,
    asker: &Asker<'_>,
    id: i64,
    minutes: i64,
    now: Timestamp,
) -> Result<Extended, QuotaError> {
    let mut session = store
        .get_session(id)?
        .filter(|s| asker.any_session || s.username == asker.name.to_lowercase())
        .ok_or_else(|| QuotaError::NotFound(format!("Session {id} not found")))?;
    if session.status != SessionStatus::Active {
        return Err(QuotaError::Conflict(format!(
            "Session {id} has ended ({}); only a running session can be extended",
            session.status.as_str()
        )));
    }
    let room = limits::RUNTIME_MINUTES_MAX - session.runtime_minutes;
    if minutes < 1 || minutes > room {
        return Err(QuotaError::invalid(
            "minutes",
            format!(
                "must be a whole number of minutes from 1 to {room}: the session runs {} minutes and may run at most {}, got {minutes}",
                session.runtime_minutes,
                limits::RUNTIME_MINUTES_MAX
            ),
        ));
    }
    let extra = session.rate.times(minutes).unwrap_or(Milli(i64::MAX));
    if let Some(message) = restricted(config, store, &session)? {
        return Ok(Extended::Refused(message));
    }
    if session.billable && config.enabled {
        if let Some(message) = refusal(config, store, &session, minutes, extra, true, now)? {
            return Ok(Extended::Refused(message));
        }
    }
    let marks = &config.notify.warn_before_stop_minutes;
    let told = store.session_warned_mark(id)?;
    session.start.runtime_minutes += minutes;
    session.start.estimated_cost = Milli(session.estimated_cost.raw().saturating_add(extra.raw()));
    let end = ends_at(&session);
    let told = still_told(marks, end, told, 60, now);
    session.start.warn_at = next_warning(marks, end, told, 60);
    store.extend_session(&session, told)?;
    Ok(Extended::Done(SessionView::from(&session)))
}

/// What `minutes` more of the running `session` would cost, or why they would be refused (the
/// extension's own checks and texts, read only): the choices a user is offered before extending.
pub fn quote(
    config: &Config,
    store: &mut dyn Store,
    session: &crate::store::Session,
    minutes: i64,
    now: Timestamp,
) -> Result<(Milli, Option<String>), QuotaError> {
    let extra = session.rate.times(minutes).unwrap_or(Milli(i64::MAX));
    let room = limits::RUNTIME_MINUTES_MAX - session.runtime_minutes;
    if minutes > room {
        return Ok((
            extra,
            Some(format!(
                "A server may run at most {} minutes; this one may run {room} more",
                limits::RUNTIME_MINUTES_MAX
            )),
        ));
    }
    if let Some(message) = restricted(config, store, session)? {
        return Ok((extra, Some(message)));
    }
    if !(session.billable && config.enabled) {
        return Ok((extra, None));
    }
    Ok((
        extra,
        refusal(config, store, session, minutes, extra, false, now)?,
    ))
}

/// The start's 403 text if the session's user may no longer use its accelerator (the groups'
/// restrictions as a start checks them: a user removed from the group that may use it).
fn restricted(
    config: &Config,
    store: &mut dyn Store,
    session: &crate::store::Session,
) -> Result<Option<String>, QuotaError> {
    let groups = GroupNames::from_set(&groups::of(store, &session.username)?);
    Ok((!config.groups.may_start(&session.resource_type, &groups))
        .then(|| forbidden_message(config, &session.resource_type)))
}

/// The start's refusal text for `minutes` more of `session` costing `extra`, if the paying
/// account cannot afford them now. `lock`: an extension (a budget's row locked, as a start does);
/// `false` for a quote in a read transaction.
fn refusal(
    config: &Config,
    store: &mut dyn Store,
    session: &crate::store::Session,
    minutes: i64,
    extra: Milli,
    lock: bool,
    now: Timestamp,
) -> Result<Option<String>, QuotaError> {
    let username = &session.username;
    let user_groups = GroupNames::from_set(&groups::of(store, username)?);
    let price = Price {
        rate: session.rate,
        minutes,
        cost: extra,
    };
    if let Some(name) = &session.budget {
        let Some(budget) = budgets::find(config, store, name)? else {
            return Ok(Some(format!(
                "Cannot start container: budget {name} no longer exists."
            )));
        };
        let ask = budgets::BudgetStart {
            budget: &budget,
            username,
            groups: &user_groups,
            resource: &session.resource_type,
            price,
            member_held: None,
            lock,
        };
        return Ok(match budgets::check_start(config, store, &ask, now)? {
            Ok(_) => None,
            Err(budgets::BudgetRefusal::Forbidden(m)) => Some(m),
            Err(budgets::BudgetRefusal::Refused(r)) => Some(r.message),
        });
    }
    let Some(user) = store.get_user(username)? else {
        // Billable sessions have a record; without one the balance is 0.
        let nothing = Paying { balance: 0, held: 0 };
        return Ok(Some(insufficient_text(Payer::Personal, nothing, price)));
    };
    if user.unlimited {
        return Ok(None);
    }
    let grants = store.account_grants(&AccountKey::User(username.clone()))?;
    let active = store.active_sessions(username)?;
    let view = AccountView::of(Some(user), &grants, &active, now);
    let u = view.record.as_ref().expect("the view of a record");
    Ok(personal_refusal(config, store, u, Some(&user_groups), price, view.held, now)?.map(|r| r.message))
}
