//! What an engine call did, for a host's metrics: gate decisions, ended sessions and their charges,
//! completed refreshes. Calls record events here as they decide; a host takes them after the call
//! and counts them only once its transaction has committed (a rolled-back or retried call's events
//! are thrown away with it). A replayed run id or idempotent request records nothing: nothing
//! happened again.
//!
//! The buffer is per thread (the component has one) and bounded; the component clears it at the
//! start of every call, so a host that never takes events holds at most one call's worth.

use std::cell::RefCell;

use crate::store::SessionStatus;

/// Events one call may hold at most (a call records a handful: cleanup aggregates by resource type).
pub const EVENTS_PER_CALL_MAX: usize = 1000;

/// How a start attempt was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateResult {
    Allowed,
    /// Not enough credits: a decision, not an error.
    Refused,
    /// The user may not start this accelerator (a group restriction): a decision too.
    Forbidden,
    /// The request itself was bad (unknown resource, bad runtime, bad body).
    Invalid,
}

impl GateResult {
    pub fn as_str(self) -> &'static str {
        match self {
            GateResult::Allowed => "allowed",
            GateResult::Refused => "refused",
            GateResult::Forbidden => "forbidden",
            GateResult::Invalid => "invalid",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A start attempt; `resource_type` is a configured resource, or `other` for one that is not.
    Gate {
        result: GateResult,
        resource_type: String,
    },
    /// `sessions` sessions of `resource_type` ended with `status`, charged `credits` in all.
    SessionsEnded {
        status: SessionStatus,
        resource_type: String,
        sessions: u64,
        credits: i64,
        /// The budget they charged (None: personal accounts, or a cleanup's count).
        budget: Option<String>,
    },
    /// A refresh was applied to the end (not a dry run, not a replay).
    Refreshed { rule_name: String, users_updated: u64 },
}

thread_local! {
    static EVENTS: RefCell<Vec<Event>> = const { RefCell::new(Vec::new()) };
}

/// Records what the current call did (beyond [`events_per_call_max`] the rest is dropped).
pub fn record(e: Event) {
    EVENTS.with(|v| {
        let mut v = v.borrow_mut();
        if v.len() < EVENTS_PER_CALL_MAX {
            v.push(e);
        }
    });
}

/// The events recorded since the last `take` or `clear`.
pub fn take() -> Vec<Event> {
    EVENTS.with(|v| std::mem::take(&mut *v.borrow_mut()))
}

/// Forgets the events recorded so far (at the start of a call).
pub fn clear() {
    EVENTS.with(|v| v.borrow_mut().clear());
}
