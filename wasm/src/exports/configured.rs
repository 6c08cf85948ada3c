//! The configuration `configure` set (with the host's dialect, the only state an instance keeps
//! between calls; nothing of a call is kept) and what every export shares: a call in a fresh `EngineCall`,
//! errors out, the rates list, a refresh result.

use std::sync::{Arc, Mutex};

use quota_core::engine_call::EngineCall;
use quota_core::refresh::RefreshResult;
use quota_core::{Config, QuotaError};

use crate::bindings::api as wit;
use crate::sql_store::SqlStore;

/// The configuration set by `configure`. An instance is single-threaded; the mutex only makes the
/// static sound to share.
static CONFIG: Mutex<Option<Arc<Config>>> = Mutex::new(None);

/// The configuration `configure` set, if it was called.
pub(super) fn config() -> Option<Arc<Config>> {
    CONFIG.lock().ok().and_then(|c| c.clone())
}

/// A new engine call on the host's store (in the fault build, without events once turned off).
pub(super) fn tx(store: &mut SqlStore) -> EngineCall<'_> {
    #[cfg(feature = "fault-injection")]
    return crate::fault::tx(store);
    #[cfg(not(feature = "fault-injection"))]
    EngineCall::new(store)
}

pub(super) fn not_configured() -> QuotaError {
    QuotaError::Store(quota_core::StoreError(
        "the host did not call `configure` first".into(),
    ))
}

/// Runs `f` with the configuration, or reports that `configure` was not called.
pub(super) fn with_config<T>(f: impl FnOnce(&Config) -> Result<T, QuotaError>) -> Result<T, wit::QuotaError> {
    match config() {
        Some(cfg) => f(&cfg),
        None => Err(not_configured()),
    }
    .map_err(error_out)
}

/// Runs a call that may change things in a new `EngineCall` on the host's store, then writes the events it
/// noted in the same transaction (a call that failed writes none); returns its answer with what it
/// observed (also when it failed: an invalid start is observed).
pub(super) fn recorded<T>(
    now: i64,
    f: impl FnOnce(&Config, &mut EngineCall<'_>) -> Result<T, QuotaError>,
) -> (Result<T, wit::QuotaError>, Vec<wit::Observation>) {
    let Some(cfg) = config() else {
        return (Err(error_out(not_configured())), Vec::new());
    };
    let mut store = SqlStore::host();
    let mut tx = tx(&mut store);
    let done = match f(&cfg, &mut tx) {
        Ok(out) => tx
            .finish(&cfg, out, quota_core::Timestamp(now))
            .map(|o| (Ok(o.answer), o.observations))
            .unwrap_or_else(|e| (Err(QuotaError::Store(e)), Vec::new())),
        Err(e) => {
            let o = tx.without_writing(());
            (Err(e), o.observations)
        }
    };
    (
        done.0.map_err(error_out),
        crate::convert::observations_out(done.1),
    )
}

pub(super) fn error_out(e: QuotaError) -> wit::QuotaError {
    match e {
        QuotaError::Invalid { field, message } => wit::QuotaError::Invalid(wit::Problem { field, message }),
        QuotaError::InsufficientBalance => wit::QuotaError::InsufficientBalance,
        QuotaError::OutOfRange(m) => wit::QuotaError::OutOfRange(m),
        QuotaError::NotFound(m) => wit::QuotaError::NotFound(m),
        QuotaError::Conflict(m) => wit::QuotaError::Conflict(m),
        QuotaError::Forbidden(m) => wit::QuotaError::Forbidden(m),
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
        settings: host_settings(&config.host_settings()),
    };
    if let Ok(mut c) = CONFIG.lock() {
        *c = Some(Arc::new(config));
    }
    Ok(summary)
}

/// The engine's settings for hosts, in the component's record.
fn host_settings(h: &quota_core::config::HostSettings) -> wit::HostSettings {
    wit::HostSettings {
        runtime_minutes_min: h.runtime_minutes_min,
        runtime_minutes_max: h.runtime_minutes_max,
        default_runtime_minutes: h.default_runtime_minutes,
        extend_choices: h.extend_choices.clone(),
        warn_before_stop_minutes: h.warn_before_stop_minutes.clone(),
        live_streams_per_user: h.live_streams_per_user,
        on_storage_error: h.on_storage_error.clone(),
        sweep_interval_seconds: h.sweep_interval_seconds,
        users_page_max: h.users_page_max,
    }
}
