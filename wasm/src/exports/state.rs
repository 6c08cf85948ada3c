//! The configuration `configure` set (the only state kept between calls) and the conversions every
//! export shares: errors out, the rates list, a refresh result.

use std::cell::RefCell;

use quota_core::refresh::RefreshResult;
use quota_core::{Config, QuotaError};

use crate::bindings::api as wit;

thread_local! {
    /// The configuration set by `configure`: the only state kept between calls.
    pub(super) static CONFIG: RefCell<Option<Config>> = const { RefCell::new(None) };
}

pub(super) fn not_configured() -> QuotaError {
    QuotaError::Store(quota_core::StoreError(
        "the host did not call `configure` first".into(),
    ))
}

/// Runs `f` with the configuration, or reports that `configure` was not called.
pub(super) fn with_config<T>(f: impl FnOnce(&Config) -> Result<T, QuotaError>) -> Result<T, wit::QuotaError> {
    CONFIG
        .with(|c| match c.borrow().as_ref() {
            Some(cfg) => f(cfg),
            None => Err(not_configured()),
        })
        .map_err(error_out)
}

/// Runs a call that may change things with the configuration and a fresh store, then writes the
/// events it noted in the same transaction (a call that failed writes none).
pub(super) fn recorded<T>(
    now: i64,
    f: impl FnOnce(&Config, &mut crate::sql_store::SqlStore) -> Result<T, QuotaError>,
) -> Result<T, wit::QuotaError> {
    with_config(|cfg| {
        let mut store = crate::sql_store::SqlStore::host();
        let out = f(cfg, &mut store)?;
        quota_core::feed::flush(cfg, &mut store, quota_core::Timestamp(now))?;
        Ok(out)
    })
}

pub(super) fn error_out(e: QuotaError) -> wit::QuotaError {
    match e {
        QuotaError::Invalid { field, message } => wit::QuotaError::Invalid(wit::Problem { field, message }),
        QuotaError::InsufficientBalance => wit::QuotaError::InsufficientBalance,
        QuotaError::OutOfRange(m) => wit::QuotaError::OutOfRange(m),
        QuotaError::NotFound(m) => wit::QuotaError::NotFound(m),
        QuotaError::Conflict(m) => wit::QuotaError::Conflict(m),
        QuotaError::Store(s) => wit::QuotaError::Storage(s.0),
    }
}

/// `(resource type, rate in thousandths)`, `cpu` first.
pub(super) fn rates_list(cfg: &Config) -> Vec<(String, i64)> {
    std::iter::once((
        quota_core::accelerators::CPU_RESOURCE.to_string(),
        cfg.cpu_rate.raw(),
    ))
    .chain(
        cfg.accelerators
            .iter()
            .map(|(k, a)| (k.clone(), a.quota_rate.raw())),
    )
    .collect()
}

pub(super) fn refresh_out(r: RefreshResult) -> Result<wit::RefreshResult, QuotaError> {
    let json =
        serde_json::to_string(&r).map_err(|e| QuotaError::Store(quota_core::StoreError(e.to_string())))?;
    Ok(wit::RefreshResult {
        users_updated: r.users_updated,
        total_change: r.total_change,
        skipped: r.skipped,
        action: r.action.as_str().to_string(),
        rule_name: r.rule_name,
        json,
        replayed: r.replayed,
    })
}

/// `configure`: the values read and checked, kept for the calls that follow, summarised.
pub(super) fn configure(values_json: &str) -> Result<wit::ConfigSummary, Vec<wit::Problem>> {
    let problem = |field: &str, message: String| wit::Problem {
        field: field.into(),
        message,
    };
    let values: serde_json::Value = serde_json::from_str(values_json)
        .map_err(|e| vec![problem("values", format!("is not valid JSON: {e}"))])?;
    let config = Config::from_values(&values).map_err(|e| {
        e.0.into_iter()
            .map(|p| match p {
                QuotaError::Invalid { field, message } => wit::Problem { field, message },
                other => problem("values", other.to_string()),
            })
            .collect::<Vec<_>>()
    })?;
    let summary = wit::ConfigSummary {
        enabled: config.enabled,
        rules: config
            .refresh_rules
            .values()
            .map(|r| wit::RuleInfo {
                name: r.name.clone(),
                enabled: r.enabled,
                schedule: r.schedule.to_string(),
            })
            .collect(),
    };
    CONFIG.with(|c| *c.borrow_mut() = Some(config));
    Ok(summary)
}
