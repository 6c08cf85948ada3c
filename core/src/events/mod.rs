//! Stored events (credit model 2, "Events"): what users, their pages and webhooks read. A call
//! notes them in its `EngineCall` as it changes things; they are written in the same
//! transaction when the call ends (`write`), so a rolled-back change leaves no event. Not the
//! observations a host counts for its metrics (`observations.rs`).
//!
//! Code that changes something notes the event (`EngineCall::note`, or `EngineCall::note_move` for a balance that
//! moved: whether it crossed a `notifyBelow` mark needs the settings, which the ledger does not
//! hold).
//!
//! - `settings.rs`: the values file's keys; `sweep.rs`: the time-driven events (`session.ending`,
//!   `grant.expiring`) and the retention purge; `webhooks.rs`: delivery steps, status, redelivery.

pub mod settings;
pub mod sweep;
pub mod webhooks;

use serde_json::{json, Value};

use crate::config::Config;
use crate::error::StoreError;
use crate::store::{AccountKey, EventKind, NewEvent, Store, StoredEvent};
use crate::time::Timestamp;

/// What a call noted, in order.
pub(crate) enum Noted {
    Event(NewEvent),
    /// An account's balance moved from `before` to `after` (an unlimited user's is not noted).
    Move {
        account: AccountKey,
        before: i64,
        after: i64,
    },
}

/// Writes the events a call noted, `balance.low` ones included, in the order they happened.
/// Called once at the end of a call that succeeded, inside its transaction.
pub(crate) fn write(
    config: &Config,
    store: &mut dyn Store,
    noted: Vec<Noted>,
    now: Timestamp,
) -> Result<(), StoreError> {
    if noted.is_empty() {
        return Ok(());
    }
    let marks = &config.notify.notify_below;
    let mut events = Vec::with_capacity(noted.len());
    for n in noted {
        match n {
            Noted::Event(e) => events.push(e),
            Noted::Move {
                account,
                before,
                after,
            } => {
                // The lowest mark this move crossed downward: one event, however many it passed.
                let crossed = marks.iter().rev().find(|t| before >= **t && after < **t);
                if let Some(t) = crossed {
                    events.push(balance_low(&account, after, *t, now));
                }
            }
        }
    }
    if events.is_empty() {
        return Ok(());
    }
    store.insert_events(&events)
}

/// The events of an account (a user's personal account, or a budget's own).
fn owner(account: &AccountKey) -> (Option<String>, Option<String>) {
    match account {
        AccountKey::User(u) => (Some(u.clone()), None),
        AccountKey::Budget(b) => (None, Some(b.clone())),
    }
}

fn balance_low(account: &AccountKey, balance: i64, threshold: i64, now: Timestamp) -> NewEvent {
    let (username, budget) = owner(account);
    NewEvent {
        kind: EventKind::BalanceLow,
        at: now,
        username,
        budget,
        data: json!({ "balance": balance, "threshold": threshold }).to_string(),
    }
}

/// A `grant.expiring` event of `account`'s grant.
pub fn grant_expiring(account: &AccountKey, data: Value, now: Timestamp) -> NewEvent {
    let (username, budget) = owner(account);
    NewEvent {
        kind: EventKind::GrantExpiring,
        at: now,
        username,
        budget,
        data: data.to_string(),
    }
}

/// An event about `username` (and the budget their session charged).
pub fn about_user(
    kind: EventKind,
    username: &str,
    budget: Option<&str>,
    data: Value,
    now: Timestamp,
) -> NewEvent {
    NewEvent {
        kind,
        at: now,
        username: Some(username.to_string()),
        budget: budget.map(str::to_string),
        data: data.to_string(),
    }
}

/// An event as the events routes show it (and a webhook is sent): `{id, kind, at, username,
/// budget, data}`.
pub fn event_json(e: &StoredEvent) -> Value {
    let data: Value = serde_json::from_str(&e.event.data).unwrap_or(Value::Null);
    json!({
        "id": e.id,
        "kind": e.event.kind.as_str(),
        "at": e.event.at,
        "username": e.event.username,
        "budget": e.event.budget,
        "data": data,
    })
}
