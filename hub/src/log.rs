//! Log lines on standard error through `tracing`: text (`2026-11-24T10:00:00Z  INFO quota_hub: ...`)
//! or JSON, one line each, levels and targets as `RUST_LOG` says (default `info`). Targets:
//! `quota_hub` (what the server does) and `access` (one line per request). Tokens and request bodies
//! are never passed here.

use tracing_subscriber::EnvFilter;

/// Installs the subscriber; `json` for one JSON object per line.
pub fn init(json: bool) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_timer(tracing_subscriber::fmt::time::SystemTime);
    if json {
        builder.json().flatten_event(true).with_current_span(false).init();
    } else {
        builder.with_ansi(false).init();
    }
}

macro_rules! info {
    ($($t:tt)*) => { ::tracing::info!(target: "quota_hub", "{}", format!($($t)*)) };
}
pub(crate) use info;

macro_rules! warning {
    ($($t:tt)*) => { ::tracing::warn!(target: "quota_hub", "{}", format!($($t)*)) };
}
pub(crate) use warning;
