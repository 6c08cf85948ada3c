//! What a serving process shares between its HTTP handlers and its timed tasks: the engine's
//! workers, the clock, the base URL, the connection limits, the metrics and the tokens in use.

use std::sync::Arc;

use crate::clock::Clock;
use crate::engine::pool::Pool;
use crate::listen::ConnLimits;
use crate::metrics::Metrics;
use crate::tokens;

pub struct App {
    pub pool: Pool,
    /// `/hub`, or empty for the root.
    pub base: String,
    pub clock: Clock,
    /// Honour `X-Quota-Test-Now` (tests only).
    pub test_clock: bool,
    /// Run the values file's refresh rules at their cron times in this process.
    pub scheduler: bool,
    /// Tokens used since `last_used` was last written.
    pub token_use: Arc<tokens::Usage>,
    pub limits: ConnLimits,
    /// Counted as requests are answered and engine calls commit; served at `{base}/metrics`.
    /// `None` with `--no-metrics`.
    pub metrics: Option<Arc<Metrics>>,
    /// Access log lines for the probes (`{base}/healthz`, `{base}/readyz`) too.
    pub log_probes: bool,
}
