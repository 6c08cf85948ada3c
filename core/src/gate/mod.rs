//! The spawn gate: may this user start this server now? What it is asked and answers is
//! `start.rs`; how it decides, read -> settle -> decide -> write, `decide.rs`; its refusals
//! `refusal.rs` (the words of a shortfall are `account::decide`'s).

mod decide;
mod price;
mod refusal;
mod start;

pub use price::estimate;
pub use refusal::forbidden_message;
pub(crate) use refusal::personal_refusal;
pub use start::{Estimate, Refusal, StartDecision, StartRequest, Started};

use crate::accelerators::CPU_RESOURCE;
use crate::config::Config;
use crate::engine_call::EngineCall;
use crate::error::QuotaError;
use crate::names::normalize_username;
use crate::observations::{GateResult, Observation};
use crate::time::Timestamp;

/// Validates a start request, closes an orphaned session of the same server, creates the user's
/// record on the first attempt, and decides. The decision is recorded as an [`Observation::Gate`].
pub fn check_start(
    config: &Config,
    tx: &mut EngineCall<'_>,
    req: &StartRequest,
    now: Timestamp,
) -> Result<StartDecision, QuotaError> {
    let decision = decide::decide(config, tx, req, now);
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
fn note_refusal(tx: &mut EngineCall<'_>, req: &StartRequest, message: &str, now: Timestamp) {
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
