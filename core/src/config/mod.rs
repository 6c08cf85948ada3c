//! Deployment configuration: `custom.quota`, `custom.accelerators` and `custom.authMode` of a
//! Helm-style values file (hosts turn the YAML into JSON first). Loading reports every problem with
//! its key path, so an operator fixes a file in one pass.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use std::fmt;

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::accelerators::{read_accelerators, Accelerator, CPU_RESOURCE};
use crate::cron::Cron;
use crate::error::QuotaError;
use crate::groups::settings::GroupRules;
use crate::json::{kind, Fields};
use crate::limits;
use crate::milli::Milli;
use crate::refresh::params::{RefreshAction, RefreshParams, RefreshRequest};
use crate::targets::Targets;
use crate::values_read::{entry_fields, mapping};

mod host_settings;
pub use host_settings::{HostSettings, HostValues, ON_STORAGE_ERROR_CHOICES};

/// The engine's configuration, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Resolved from `enabled` and `authMode`.
    pub enabled: bool,
    pub auth_mode: Option<String>,
    pub cpu_rate: Milli,
    pub minimum_to_start: Milli,
    pub default_quota: i64,
    /// In the values file's order (spawn pages preselect the first one).
    pub accelerators: IndexMap<String, Accelerator>,
    pub refresh_rules: BTreeMap<String, RefreshRule>,
    /// `custom.quota.groups`: per-group grants and accelerator access.
    pub groups: GroupRules,
    /// `custom.quota.budgets`: the budgets the values file defines.
    pub budgets: BTreeMap<String, std::sync::Arc<crate::budgets::definition::BudgetDefinition>>,
    /// Warnings, low-balance marks and webhooks (credit model 2, "Events").
    pub notify: crate::events::settings::Notify,
    /// `custom.quota.requestMaxAmount`: the most one credit request may ask for.
    pub request_max_amount: i64,
    /// What the hosts act on besides the engine's own rules (`host_settings.rs`).
    pub hosts: HostValues,
}

/// One `custom.quota.refreshRules.<name>` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct RefreshRule {
    pub name: String,
    pub enabled: bool,
    pub schedule: Cron,
    pub params: RefreshParams,
}

/// The JSON Schema of the values document this reader takes (`quota-hub config-schema`; the Helm
/// chart's `values.schema.json` embeds its `custom`). Written beside the reader and held to it by
/// a property test: every document the engine accepts validates.
pub const VALUES_SCHEMA: &str = include_str!("schema.json");

impl Default for HostSettings {
    /// An empty values file's.
    fn default() -> HostSettings {
        Config::default().host_settings()
    }
}

impl Default for Config {
    /// The configuration of an empty values file: every default, no accelerator, rule or budget.
    fn default() -> Config {
        Config::from_values(&serde_json::json!({"custom": {"authMode": "dummy"}}))
            .unwrap_or_else(|e| panic!("the defaults are valid: {e}"))
    }
}

/// Every problem found while loading, each with its key path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(pub Vec<QuotaError>);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Loads from a whole values document (`{custom: {quota, accelerators, authMode}, ...}`); keys
    /// outside those three belong to other parts of the chart and are ignored.
    pub fn from_values(values: &Value) -> Result<Config, ConfigError> {
        let mut problems = Vec::new();
        let custom = match values {
            Value::Object(m) => m.get("custom"),
            Value::Null => None,
            other => {
                problems.push(QuotaError::invalid(
                    "values",
                    format!("must be a mapping, got {}", kind(other)),
                ));
                None
            }
        };
        let mut c = Fields::new("custom", custom, true);
        let auth_mode = c.opt_str("authMode").map(str::to_string);
        let quota = c.raw("quota");
        let accels = c.raw("accelerators");
        problems.extend(c.finish_lenient());

        let mut q = Fields::new("custom.quota", quota, true);
        let enabled_setting = q.opt_bool("enabled");
        let rate_max = Milli(limits::RATE_MAX_MILLI);
        let cpu_rate = q.opt_milli("cpuRate", rate_max).unwrap_or(Milli(1000));
        let minimum_to_start = q
            .opt_milli("minimumToStart", Milli(limits::AMOUNT_ABS_MAX * 1000))
            .unwrap_or(Milli(10_000));
        let default_quota = q.opt_int("defaultQuota", 0, limits::AMOUNT_ABS_MAX).unwrap_or(0);
        let request_max_amount = q
            .opt_int("requestMaxAmount", 1, limits::AMOUNT_ABS_MAX)
            .unwrap_or(limits::REQUEST_MAX_AMOUNT_DEFAULT);
        let rules_value = q.raw("refreshRules");
        let groups_value = q.raw("groups");
        let budgets_value = q.raw("budgets");
        let notify = crate::events::settings::read(&mut q, &mut problems);
        let hosts = host_settings::read(&mut q, &mut problems);
        problems.extend(q.finish());

        let enabled = match (enabled_setting, auth_mode.as_deref()) {
            (Some(e), _) => e,
            (None, Some("github" | "multi")) => true,
            (None, Some("auto-login" | "dummy")) => false,
            (None, Some(other)) => {
                problems.push(QuotaError::invalid(
                    "custom.authMode",
                    format!(
                        "`{other}` is not one of github, multi, auto-login, dummy (needed because custom.quota.enabled is null)"
                    ),
                ));
                false
            }
            (None, None) => {
                problems.push(QuotaError::invalid(
                    "custom.authMode",
                    "is required when custom.quota.enabled is null (one of github, multi, auto-login, dummy)",
                ));
                false
            }
        };

        let accelerators = read_accelerators(accels, &mut problems);
        let refresh_rules = read_rules(rules_value, &mut problems);
        let groups = crate::groups::settings::read(groups_value, &accelerators, &mut problems);
        let budgets = crate::budgets::definition::read(budgets_value, &accelerators, &mut problems);

        if problems.is_empty() {
            Ok(Config {
                enabled,
                auth_mode,
                cpu_rate,
                minimum_to_start,
                default_quota,
                accelerators,
                refresh_rules,
                groups,
                budgets,
                notify,
                request_max_amount,
                hosts,
            })
        } else {
            Err(ConfigError(problems))
        }
    }

    /// What the hosts act on (the component's `host-settings`).
    pub fn host_settings(&self) -> HostSettings {
        HostSettings::of(&self.hosts, &self.notify)
    }

    /// The rate of a resource type (`cpu` or an accelerator key).
    pub fn rate_of(&self, resource: &str) -> Option<Milli> {
        if resource == CPU_RESOURCE {
            Some(self.cpu_rate)
        } else {
            self.accelerators.get(resource).map(|a| a.quota_rate)
        }
    }

    /// The refresh that configured rule `name` makes when it runs (the scheduler's entry point).
    pub fn rule_request(
        &self,
        name: &str,
        run_id: Option<String>,
        dry_run: bool,
    ) -> Result<RefreshRequest, QuotaError> {
        let rule = self
            .refresh_rules
            .get(name)
            .ok_or_else(|| QuotaError::NotFound(format!("No refresh rule named `{name}`")))?;
        Ok(RefreshRequest {
            params: rule.params.clone(),
            run_id,
            dry_run,
        })
    }

    /// The first firing minute of rule `name` strictly after `after`.
    pub fn next_fire(&self, name: &str, after: crate::Timestamp) -> Option<crate::Timestamp> {
        self.refresh_rules.get(name)?.schedule.next_after(after)
    }

    /// `{cpu: cpuRate, <accelerator>: quotaRate, ...}` as JSON numbers.
    pub fn rates_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert(CPU_RESOURCE.to_string(), self.cpu_rate.to_json());
        for (k, a) in &self.accelerators {
            m.insert(k.clone(), a.quota_rate.to_json());
        }
        Value::Object(m)
    }

    /// Each resource's display name as the pages show it (docs/glossary.md): "CPU" for the CPU,
    /// an accelerator's `displayName` (its key when it has none).
    pub fn resource_names(&self) -> indexmap::IndexMap<String, String> {
        let mut m = indexmap::IndexMap::new();
        m.insert(CPU_RESOURCE.to_string(), "CPU".to_string());
        for (k, a) in &self.accelerators {
            let name = if a.display_name.is_empty() {
                k.clone()
            } else {
                a.display_name.clone()
            };
            m.insert(k.clone(), name);
        }
        m
    }
}

/// Builds the config from a JSON/YAML-shaped value via serde, so hosts can deserialize it directly.
impl<'de> Deserialize<'de> for Config {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Config, D::Error> {
        let v = Value::deserialize(d)?;
        Config::from_values(&v).map_err(serde::de::Error::custom)
    }
}

fn read_rules(v: Option<&Value>, problems: &mut Vec<QuotaError>) -> BTreeMap<String, RefreshRule> {
    let mut out = BTreeMap::new();
    let path = "custom.quota.refreshRules";
    let Some(map) = mapping(v, path, "a mapping of rule name to rule", problems) else {
        return out;
    };
    for (name, entry) in map {
        let path = format!("custom.quota.refreshRules.{name}");
        let Some(mut f) = entry_fields(&path, name, entry, problems) else {
            continue;
        };
        let enabled = f.opt_bool("enabled").unwrap_or(false);
        let schedule = f.req_str("schedule").and_then(|s| match Cron::parse(s) {
            Ok(c) => Some(c),
            Err(e) => {
                let p = f.path_of("schedule");
                f.problem(&p, e);
                None
            }
        });
        let action = match f.opt_str("action").unwrap_or("add") {
            "add" => Some(RefreshAction::Add),
            "set" => Some(RefreshAction::Set),
            other => {
                let p = f.path_of("action");
                f.problem(&p, format!("must be `add` or `set`, got `{other}`"));
                None
            }
        };
        let min_amount = if action == Some(RefreshAction::Set) {
            0
        } else {
            -limits::AMOUNT_ABS_MAX
        };
        let amount = f.req_int("amount", min_amount, limits::AMOUNT_ABS_MAX);
        let max_balance = f.opt_int("maxBalance", 0, limits::BALANCE_ABS_MAX);
        let min_balance = f.opt_int("minBalance", 0, limits::BALANCE_ABS_MAX);
        let mut target_problems = Vec::new();
        let expires_path = f.path_of("expiresAfter");
        let expires_after = f.opt_str("expiresAfter").and_then(|text| {
            crate::lots::parse_expires_after(&expires_path, text)
                .map_err(|e| target_problems.push(e))
                .ok()
        });
        if expires_after.is_some() && action == Some(RefreshAction::Add) && amount.is_some_and(|a| a <= 0) {
            target_problems.push(QuotaError::invalid(
                &expires_path,
                "makes the credit a run gives a dated grant: only with a top-up (`add` above 0) or `set`",
            ));
        }
        let targets_value = f.raw("targets");
        let targets = Targets::read(&f.path_of("targets"), targets_value, &mut target_problems);
        let mut errs = f.finish();
        errs.extend(target_problems);
        if errs.is_empty() {
            if let (Some(schedule), Some(action), Some(amount)) = (schedule, action, amount) {
                let params = RefreshParams {
                    rule_name: name.clone(),
                    action,
                    amount,
                    max_balance,
                    min_balance,
                    targets,
                    expires_after,
                };
                out.insert(
                    name.clone(),
                    RefreshRule {
                        name: name.clone(),
                        enabled,
                        schedule,
                        params,
                    },
                );
            }
        }
        problems.extend(errs);
    }
    out
}

#[cfg(test)]
mod tests;
