//! What the engine replies besides a request's answer: its configuration's summary, a schema
//! migration's versions, its refusals as one error type. The façade, the worker and a transaction
//! share them, so `engine.rs`, `worker/` and `tx.rs` depend on this file and not on each other.

use quota_core::refresh::RefreshResult;
use quota_core::{QuotaError, StoreError};

use crate::bindings::api;
use crate::convert as cv;
use crate::error::HostError;

/// What the engine made of a values document.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfigSummary {
    /// Whether quota is enforced (resolved from `enabled` and `authMode`).
    pub enabled: bool,
    /// Every refresh rule, enabled or not.
    pub rules: Vec<RuleInfo>,
    /// What a host acts on, from the engine (never restated in a host).
    pub settings: quota_core::config::HostSettings,
}

/// A configured refresh rule, for a scheduler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleInfo {
    pub name: String,
    pub enabled: bool,
    /// Five-field cron expression (UTC).
    pub schedule: String,
}

/// What `migrate` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Migration {
    /// The schema version found (0 for an empty database).
    pub from_version: u32,
    /// The engine's schema version, which the database has now.
    pub to_version: u32,
}

/// An export's `result<T, quota-error>` as one error type.
pub(crate) fn decided<T>(r: Result<T, api::QuotaError>) -> Result<T, HostError> {
    r.map_err(|e| HostError::Quota(cv::quota_error(e)))
}

/// The engine's refresh answer: its JSON is core's `RefreshResult`, plus whether it was replayed.
pub(crate) fn refresh_result(
    r: Result<api::RefreshResult, api::QuotaError>,
) -> Result<RefreshResult, HostError> {
    let r = decided(r)?;
    let mut result: RefreshResult = serde_json::from_str(&r.json).map_err(|e| {
        HostError::Quota(QuotaError::Store(StoreError(format!(
            "the engine's refresh answer is not a refresh result: {e}"
        ))))
    })?;
    result.replayed = r.replayed;
    Ok(result)
}
