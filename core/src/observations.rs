//! What an engine call observed, for a host's metrics: gate decisions, ended sessions and their
//! charges, completed refreshes, budget totals the sweep repaired. A call records them in its `EngineCall` as it decides, and
//! they are returned with its answer; a host counts them only once its transaction has committed
//! (a rolled-back or retried call's observations are thrown away with it). A replayed run id or
//! idempotent request observes nothing: nothing happened again.
//!
//! Not the stored events users and webhooks read (`events/`): observations are never stored.

use crate::store::SessionStatus;

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
pub enum Observation {
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
    /// The sweep found a budget's running total apart from its sessions' sum and set it right
    /// (thousandths: what it said, what it holds now).
    HoldsRepaired { budget: String, kept: i64, summed: i64 },
}

/// The answer of an engine call and what it observed, returned together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed<T> {
    pub answer: T,
    pub observations: Vec<Observation>,
}
