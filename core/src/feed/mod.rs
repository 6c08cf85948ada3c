//! Events (credit model 2, "Events"): what a call noted as it changed things, written in the same
//! transaction at the end of the call, so a rolled-back change leaves no event.
//!
//! Code that changes something notes the event here (`note`, or `note_move` for a balance that
//! moved: whether it crossed a `notifyBelow` mark needs the settings, which the ledger does not
//! hold). The entry points that run a whole call (`api::handle_request_step`, the component's
//! exports) `clear` at the start and `flush` at the end of a call that succeeded.
//!
//! - `settings.rs`: the values file's keys; `sweep.rs`: the time-driven events (`session.ending`,
//!   `grant.expiring`) and the retention purge; `webhooks.rs`: delivery steps, status, redelivery.

pub mod settings;
pub mod sweep;
pub mod webhooks;

use std::cell::RefCell;

use serde_json::{json, Value};

use crate::config::Config;
use crate::error::StoreError;
use crate::store::{AccountKey, EventKind, NewEvent, Store, StoredEvent};
use crate::time::Timestamp;

/// What a call noted, in order.
enum Noted {
    Event(NewEvent),
    /// An account's balance moved from `before` to `after` (an unlimited user's is not noted).
    Move {
        account: AccountKey,
        before: i64,
        after: i64,
    },
}

/// Notes one call may hold (a refresh of many users notes one move per user; beyond this the
/// rest are dropped rather than hold unbounded memory).
const NOTED_MAX: usize = 1_000_000;

thread_local! {
    static NOTED: RefCell<Vec<Noted>> = const { RefCell::new(Vec::new()) };
    /// Off only in a benchmark that measures what writing events costs (the component's
    /// fault-injection build, `/__fault/events-off`): never in a host.
    static WRITING: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// Turns the writing of events off or on in this thread (instance): for the benchmark that
/// measures their cost, same run, same component.
pub fn set_writing(on: bool) {
    WRITING.with(|w| w.set(on));
}

fn push(n: Noted) {
    NOTED.with(|v| {
        let mut v = v.borrow_mut();
        if v.len() < NOTED_MAX {
            v.push(n);
        }
    });
}

/// Notes an event of the current call.
pub fn note(e: NewEvent) {
    push(Noted::Event(e));
}

/// Notes that an account's balance moved (the ledger calls this for every change it writes).
pub fn note_move(account: AccountKey, before: i64, after: i64) {
    if after < before {
        push(Noted::Move {
            account,
            before,
            after,
        });
    }
}

/// Forgets what was noted (at the start of a call, and after a failed one).
pub fn clear() {
    NOTED.with(|v| v.borrow_mut().clear());
}

/// Writes the events the call noted, `balance.low` ones included, in the order they happened.
/// Called once at the end of a call that succeeded, inside its transaction.
pub fn flush(config: &Config, store: &mut dyn Store, now: Timestamp) -> Result<(), StoreError> {
    let noted = NOTED.with(|v| std::mem::take(&mut *v.borrow_mut()));
    if noted.is_empty() || !WRITING.with(|w| w.get()) {
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
