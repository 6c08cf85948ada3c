//! `GET {base}/metrics`: Prometheus counters of what the engine decided and what the server did,
//! in the OpenMetrics text format (`prometheus-client`).
//!
//! The engine's observations (gate decisions, ended sessions and their charges, refreshes; not the
//! ledger's events, which webhooks deliver) are counted when their transaction commits, never for a
//! call rolled back, retried or replayed. Refusals are decisions, counted under `result="refused"`,
//! never as errors. Every label has a bounded set of values: route templates
//! (`/api/quota/sessions/{id}/end`), configured resource types and rule names (`other` for anything
//! else, `manual` for a refresh without a rule name).

pub mod deliveries;
pub mod durability;
mod labels;
pub mod process;

use std::collections::BTreeSet;
use std::sync::{Mutex, OnceLock};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use quota_host::observe::{Observation, Observer};

use labels::{
    method_label, request_histogram, BudgetLabels, EndLabels, GateLabels, HttpLabels, ResourceLabels,
    RuleLabels,
};

/// One enabled rule as the metrics show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleStatus {
    pub rule: String,
    /// Its newest fire time at or before now (within the lookback).
    pub last_scheduled: quota_core::Timestamp,
    /// Whether that run was applied (by any server, hub or CronJob: the database says).
    pub last_applied: bool,
    /// The newest of its latest fire times whose run was applied, if any.
    pub last_success: Option<quota_core::Timestamp>,
}

/// The `Content-Type` of the exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The scope that lets a token (a Prometheus scraper's) read the metrics and nothing else.
pub const SCOPE_METRICS: &str = "quota:metrics";

pub struct Metrics {
    registry: Registry,
    /// The values file's rule names: any other `rule_name` is counted as `other`.
    rules: OnceLock<BTreeSet<String>>,
    gate: Family<GateLabels, Counter>,
    sessions_active: Family<ResourceLabels, Gauge>,
    session_ends: Family<EndLabels, Counter>,
    credits_charged: Family<ResourceLabels, Counter>,
    budget_charged: Family<BudgetLabels, Counter>,
    budget_balance: Family<BudgetLabels, Gauge>,
    refresh_runs: Family<RuleLabels, Counter>,
    refresh_users: Family<RuleLabels, Counter>,
    requests: Family<HttpLabels, Counter>,
    durations: Family<HttpLabels, Histogram>,
    busy: Counter,
    conflicts: Counter,
    holds_repaired: Counter,
    traps: Counter,
    shared_calls: Histogram,
    write_waiting: Gauge,
    write_running: Gauge,
    refresh_last_scheduled: Family<RuleLabels, Gauge>,
    refresh_last_success: Family<RuleLabels, Gauge>,
    refresh_last_applied: Family<RuleLabels, Gauge>,
    /// Webhook deliveries (counted by the delivery tasks; pending read at scrape time).
    pub deliveries: deliveries::Deliveries,
    /// Backups and replication (read at scrape time).
    pub durability: durability::Durability,
    /// One scrape at a time sets the active-session gauges.
    scraping: Mutex<()>,
}

impl Metrics {
    /// The metrics, with the backups and the replica `sources` names.
    pub fn with(sources: durability::Sources) -> Metrics {
        let mut registry = Registry::default();
        let deliveries = deliveries::Deliveries::new(&mut registry);
        let durability = durability::Durability::new(&mut registry, sources);
        let mut m = Metrics {
            registry,
            rules: OnceLock::new(),
            gate: Family::default(),
            sessions_active: Family::default(),
            session_ends: Family::default(),
            credits_charged: Family::default(),
            budget_charged: Family::default(),
            budget_balance: Family::default(),
            refresh_runs: Family::default(),
            refresh_users: Family::default(),
            requests: Family::default(),
            durations: Family::new_with_constructor(request_histogram),
            busy: Counter::default(),
            conflicts: Counter::default(),
            holds_repaired: Counter::default(),
            traps: Counter::default(),
            shared_calls: Histogram::new(exponential_buckets(1.0, 2.0, 8)),
            write_waiting: Gauge::default(),
            write_running: Gauge::default(),
            refresh_last_scheduled: Family::default(),
            refresh_last_success: Family::default(),
            refresh_last_applied: Family::default(),
            deliveries,
            durability,
            scraping: Mutex::new(()),
        };
        m.register_engine_series();
        m.register_server_series();
        m.registry
            .register_collector(Box::new(crate::metrics::process::ProcessCollector));
        m
    }

    /// What the engine decided: the gate, sessions, budgets, refreshes (counted when their call
    /// committed).
    fn register_engine_series(&mut self) {
        let m = &mut *self;
        let r = &mut m.registry;
        r.register(
            "quota_gate_decisions",
            "Spawn gate decisions by result (allowed, refused: not enough credits, forbidden: an accelerator of other groups, invalid: a bad request) and resource type",
            m.gate.clone(),
        );
        r.register(
            "quota_sessions_active",
            "Usage sessions active now, by resource type (read from the database at scrape time)",
            m.sessions_active.clone(),
        );
        r.register(
            "quota_session_ends",
            "Usage sessions ended, by status (completed, cleaned_up) and resource type",
            m.session_ends.clone(),
        );
        r.register(
            "quota_credits_charged",
            "Credits deducted for ended sessions, by resource type",
            m.credits_charged.clone(),
        );
        r.register(
            "quota_budget_credits_charged",
            "Credits charged to shared budgets for ended sessions, by budget",
            m.budget_charged.clone(),
        );
        r.register(
            "quota_budget_balance",
            "Each shared budget's balance as of now (read from the database at scrape time)",
            m.budget_balance.clone(),
        );
        r.register(
            "quota_budget_holds_repaired",
            "Budgets whose running total of what their running sessions hold the sweep found apart from the sessions' sum, and set right (a write no trigger saw: docs/operations.md)",
            m.holds_repaired.clone(),
        );
        r.register(
            "quota_refresh_runs",
            "Refreshes applied (not dry runs or replays), by rule (manual: no rule name)",
            m.refresh_runs.clone(),
        );
        r.register(
            "quota_refresh_users_updated",
            "Users whose balance a refresh changed, by rule",
            m.refresh_users.clone(),
        );
    }

    /// What the server did: HTTP, storage, the engine's traps, the writers, the rules' schedule,
    /// the build.
    fn register_server_series(&mut self) {
        let m = &mut *self;
        let r = &mut m.registry;
        r.register(
            "quota_http_requests",
            "HTTP requests answered, by route template, method and status",
            m.requests.clone(),
        );
        r.register(
            "quota_http_request_duration_seconds",
            "Time from a request's arrival to its answer, by route template, method and status",
            m.durations.clone(),
        );
        r.register(
            "quota_storage_busy",
            "Engine calls failed because the database stayed locked or conflicting (answered 503)",
            m.busy.clone(),
        );
        r.register(
            "quota_storage_conflict_retries",
            "Engine calls run again after a conflict with a concurrent transaction (PostgreSQL)",
            m.conflicts.clone(),
        );
        r.register(
            "quota_engine_traps",
            "Engine calls that trapped (panic, deadline, memory limit) and were rolled back",
            m.traps.clone(),
        );
        r.register(
            "quota_shared_commit_calls",
            "Write calls kept per commit of a writer (shared commit; its count is the number of commits)",
            m.shared_calls.clone(),
        );
        r.register(
            "quota_write_calls_waiting",
            "Write requests queued for the writer now",
            m.write_waiting.clone(),
        );
        r.register(
            "quota_write_calls_running",
            "Write requests the writers are running now (a shared commit counts each of its calls)",
            m.write_running.clone(),
        );
        r.register(
            "quota_refresh_last_scheduled_timestamp_seconds",
            "An enabled refresh rule's newest fire time at or before now (Unix seconds)",
            m.refresh_last_scheduled.clone(),
        );
        r.register(
            "quota_refresh_last_success_timestamp_seconds",
            "The newest fire time of an enabled refresh rule whose run was applied, by any server or CronJob (read from the database)",
            m.refresh_last_success.clone(),
        );
        r.register(
            "quota_refresh_last_run_applied",
            "1 when an enabled refresh rule's newest scheduled run was applied, else 0",
            m.refresh_last_applied.clone(),
        );
        r.register(
            "quota_build",
            "The running quota-hub's version (and the commit it was built from, when known)",
            prometheus_client::metrics::info::Info::new(vec![
                ("version".to_string(), env!("CARGO_PKG_VERSION").to_string()),
                (
                    "revision".to_string(),
                    option_env!("QUOTA_BUILD_REVISION")
                        .unwrap_or("unknown")
                        .to_string(),
                ),
            ]),
        );
    }

    /// The values file's rule names (known once the engine has read it).
    pub fn know_rules(&self, names: impl IntoIterator<Item = String>) {
        let _ = self.rules.set(names.into_iter().collect());
    }

    fn rule_label(&self, name: &str) -> String {
        match name {
            "manual" => "manual".into(),
            n if self.rules.get().is_some_and(|r| r.contains(n)) => n.into(),
            _ => "other".into(),
        }
    }

    /// Counts one answered request.
    pub fn request(&self, route: &'static str, method: &str, status: u16, seconds: f64) {
        let labels = HttpLabels {
            route,
            method: method_label(method),
            status,
        };
        self.requests.get_or_create(&labels).inc();
        self.durations.get_or_create(&labels).observe(seconds);
    }

    /// The exposition, with the active sessions per resource type, the budgets' balances and the
    /// refresh rules' runs as read just now, and the write calls (waiting, running) now.
    pub fn render(
        &self,
        active: &[(String, u64)],
        budgets: &[(String, i64)],
        rules: &[RuleStatus],
        writes: (usize, usize),
    ) -> String {
        let _one = self.scraping.lock().unwrap_or_else(|p| p.into_inner());
        self.budget_balance.clear();
        for (name, balance) in budgets {
            let labels = BudgetLabels { budget: name.clone() };
            self.budget_balance.get_or_create(&labels).set(*balance);
        }
        self.write_waiting
            .set(i64::try_from(writes.0).unwrap_or(i64::MAX));
        self.write_running
            .set(i64::try_from(writes.1).unwrap_or(i64::MAX));
        self.sessions_active.clear();
        for (resource_type, n) in active {
            let labels = ResourceLabels {
                resource_type: resource_type.clone(),
            };
            self.sessions_active
                .get_or_create(&labels)
                .set(i64::try_from(*n).unwrap_or(i64::MAX));
        }
        for family in [
            &self.refresh_last_scheduled,
            &self.refresh_last_success,
            &self.refresh_last_applied,
        ] {
            family.clear();
        }
        for r in rules {
            let labels = RuleLabels { rule: r.rule.clone() };
            self.refresh_last_scheduled
                .get_or_create(&labels)
                .set(r.last_scheduled.seconds());
            self.refresh_last_applied
                .get_or_create(&labels)
                .set(i64::from(r.last_applied));
            if let Some(t) = r.last_success {
                self.refresh_last_success.get_or_create(&labels).set(t.seconds());
            }
        }
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

impl Observer for Metrics {
    fn committed(&self, observations: &[Observation]) {
        for o in observations {
            match o {
                Observation::Gate {
                    result,
                    resource_type,
                } => {
                    let labels = GateLabels {
                        result: result.as_str(),
                        resource_type: resource_type.clone(),
                    };
                    self.gate.get_or_create(&labels).inc();
                }
                Observation::SessionsEnded {
                    status,
                    resource_type,
                    sessions,
                    credits,
                    budget,
                } => {
                    if let Some(b) = budget {
                        let labels = BudgetLabels { budget: b.clone() };
                        self.budget_charged
                            .get_or_create(&labels)
                            .inc_by(u64::try_from(*credits).unwrap_or(0));
                    }
                    let labels = EndLabels {
                        status: status.as_str(),
                        resource_type: resource_type.clone(),
                    };
                    self.session_ends.get_or_create(&labels).inc_by(*sessions);
                    let labels = ResourceLabels {
                        resource_type: resource_type.clone(),
                    };
                    let charged = self.credits_charged.get_or_create(&labels);
                    charged.inc_by(u64::try_from(*credits).unwrap_or(0));
                }
                Observation::Refreshed {
                    rule_name,
                    users_updated,
                } => {
                    let labels = RuleLabels {
                        rule: self.rule_label(rule_name),
                    };
                    self.refresh_runs.get_or_create(&labels).inc();
                    self.refresh_users.get_or_create(&labels).inc_by(*users_updated);
                }
                Observation::HoldsRepaired { .. } => {
                    self.holds_repaired.inc();
                }
            }
        }
    }

    fn trapped(&self) {
        self.traps.inc();
    }

    fn busy(&self) {
        self.busy.inc();
    }

    fn conflict_retried(&self) {
        self.conflicts.inc();
    }

    fn commit_shared(&self, calls: usize) {
        self.shared_calls.observe(calls as f64);
    }
}

/// Below the base URL.
pub const METRICS_PATH: &str = "/metrics";
