//! Deployment configuration: `custom.quota`, `custom.accelerators` and `custom.authMode` of a
//! Helm-style values file (hosts turn the YAML into JSON first). Loading reports every problem with
//! its key path, so an operator fixes a file in one pass.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use std::fmt;

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::accelerators::{cpu_resource, read_accelerators, Accelerator};
use crate::cron::Cron;
use crate::error::QuotaError;
use crate::groups::settings::GroupRules;
use crate::json::{kind, Fields};
use crate::limits;
use crate::milli::Milli;
use crate::refresh::{RefreshAction, RefreshParams};
use crate::targets::Targets;
use crate::values_read::{entry_fields, mapping};

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
pub const values_schema: &str = include_str!("config_schema.json");

/// `custom.quota.onStorageError`'s values: a gate whose database fails refuses the spawn (the
/// default), or lets it start unbilled.
pub const on_storage_error_choices: [&str; 2] = ["refuse", "allow"];

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
        let rate_max = Milli(limits::rate_max_milli);
        let cpu_rate = q.opt_milli("cpuRate", rate_max).unwrap_or(Milli(1000));
        let minimum_to_start = q
            .opt_milli("minimumToStart", Milli(limits::amount_abs_max * 1000))
            .unwrap_or(Milli(10_000));
        let default_quota = q.opt_int("defaultQuota", 0, limits::amount_abs_max).unwrap_or(0);
        let rules_value = q.raw("refreshRules");
        let groups_value = q.raw("groups");
        // What a gating host does when its database fails at the gate (the JupyterHub package:
        // refuse the spawn, or let it start unbilled); read by the hosts, checked here.
        if let Some(p) = q.opt_str("onStorageError") {
            if !on_storage_error_choices.contains(&p) {
                problems.push(QuotaError::invalid(
                    "custom.quota.onStorageError",
                    format!("`{p}` is not one of refuse, allow"),
                ));
            }
        }
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
            })
        } else {
            Err(ConfigError(problems))
        }
    }

    /// The rate of a resource type (`cpu` or an accelerator key).
    pub fn rate_of(&self, resource: &str) -> Option<Milli> {
        if resource == cpu_resource {
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
    ) -> Result<crate::refresh::RefreshRequest, QuotaError> {
        let rule = self
            .refresh_rules
            .get(name)
            .ok_or_else(|| QuotaError::NotFound(format!("No refresh rule named `{name}`")))?;
        Ok(crate::refresh::RefreshRequest {
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
        m.insert(cpu_resource.to_string(), self.cpu_rate.to_json());
        for (k, a) in &self.accelerators {
            m.insert(k.clone(), a.quota_rate.to_json());
        }
        Value::Object(m)
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
            -limits::amount_abs_max
        };
        let amount = f.req_int("amount", min_amount, limits::amount_abs_max);
        let max_balance = f.opt_int("maxBalance", 0, limits::balance_abs_max);
        let min_balance = f.opt_int("minBalance", 0, limits::balance_abs_max);
        let mut target_problems = Vec::new();
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
mod tests {
    use super::*;

    fn load(json: &str) -> Result<Config, ConfigError> {
        Config::from_values(&serde_json::from_str(json).unwrap())
    }

    #[test]
    fn defaults_and_auto_enable() {
        let c = load(r#"{"custom": {"authMode": "github"}}"#).unwrap();
        assert!(c.enabled);
        assert_eq!(
            (c.cpu_rate, c.minimum_to_start, c.default_quota),
            (Milli(1000), Milli(10_000), 0)
        );
        assert!(c.refresh_rules.is_empty());
        assert!(load(r#"{"custom": {"authMode": "multi"}}"#).unwrap().enabled);
        assert!(!load(r#"{"custom": {"authMode": "dummy"}}"#).unwrap().enabled);
        assert!(!load(r#"{"custom": {"authMode": "auto-login"}}"#).unwrap().enabled);
        assert!(
            load(r#"{"custom": {"authMode": "dummy", "quota": {"enabled": true}}}"#)
                .unwrap()
                .enabled
        );
        assert!(
            !load(r#"{"custom": {"authMode": "github", "quota": {"enabled": false}}}"#)
                .unwrap()
                .enabled
        );
    }

    #[test]
    fn unknown_auth_mode_with_null_enabled_is_an_error() {
        let e = load(r#"{"custom": {"authMode": "ldap", "quota": {"enabled": null}}}"#).unwrap_err();
        assert!(e.to_string().starts_with("custom.authMode: `ldap`"), "{e}");
        assert!(load(r#"{"custom": {"authMode": "ldap", "quota": {"enabled": true}}}"#).is_ok());
    }

    #[test]
    fn on_storage_error_is_refuse_or_allow() {
        for ok in ["refuse", "allow"] {
            load(&format!(
                r#"{{"custom": {{"authMode": "github", "quota": {{"onStorageError": "{ok}"}}}}}}"#
            ))
            .unwrap();
        }
        for (bad, says) in [
            (r#""ignore""#, "`ignore` is not one of refuse, allow"),
            ("true", "must be a string"),
        ] {
            let e = load(&format!(
                r#"{{"custom": {{"authMode": "github", "quota": {{"onStorageError": {bad}}}}}}}"#
            ))
            .unwrap_err()
            .to_string();
            assert!(
                e.contains("custom.quota.onStorageError") && e.contains(says),
                "{e}"
            );
        }
    }

    #[test]
    fn every_problem_is_reported_with_its_key_path() {
        let e = load(
            r#"{"custom": {"authMode": "github",
                "quota": {"cpuRate": 0.0001, "minimumToStart": "ten", "defaultQuota": -1, "cpurate": 1,
                  "refreshRules": {"daily": {"schedule": "0 25 * * *", "amount": 5, "targets": {"includeUsers": []}}}},
                "accelerators": {"cpu": {"quotaRate": 1}, "a100": {"quotaRate": -2}, "v100": {}}}}"#,
        )
        .unwrap_err();
        let text = e.to_string();
        for path in [
            "custom.quota.cpuRate:",
            "custom.quota.minimumToStart:",
            "custom.quota.defaultQuota:",
            "custom.quota.cpurate: unknown field",
            "custom.quota.refreshRules.daily.schedule: hour field",
            "custom.quota.refreshRules.daily.targets.includeUsers:",
            "custom.accelerators.cpu:",
            "custom.accelerators.a100.quotaRate:",
            "custom.accelerators.v100.quotaRate: is required",
        ] {
            assert!(
                text.lines().any(|l| l.starts_with(path)),
                "missing {path} in\n{text}"
            );
        }
        assert_eq!(e.0.len(), 9, "{text}");
    }

    #[test]
    fn accelerators_keep_extra_keys_and_exact_rates() {
        let c = load(
            r#"{"hub": {"x": 1}, "custom": {"authMode": "github", "accelerators": {
                "phx": {"displayName": "PHX", "quotaRate": 2.5, "nodeSelector": {"gpu": "phx"}, "resources": {"limits": 1}}}}}"#,
        )
        .unwrap();
        let a = &c.accelerators["phx"];
        assert_eq!(a.quota_rate, Milli(2500));
        assert_eq!(a.extra["resources"]["limits"], 1);
        let shown = serde_json::to_value(a).unwrap();
        assert_eq!(shown.as_object().unwrap().len(), 4);
        assert_eq!(c.rates_json().to_string(), r#"{"cpu":1,"phx":2.5}"#);
    }

    #[test]
    fn an_accelerators_env_is_checked_and_kept_unexposed() {
        let c = load(
            r#"{"custom": {"authMode": "github", "accelerators": {
                "phx": {"quotaRate": 2, "env": {"PHX_VISIBLE": "all", "A.b-c_1": ""}}}}}"#,
        )
        .unwrap();
        assert_eq!(c.accelerators["phx"].extra["env"]["PHX_VISIBLE"], "all");
        assert_eq!(
            serde_json::to_value(&c.accelerators["phx"])
                .unwrap()
                .as_object()
                .unwrap()
                .len(),
            4
        );
        let problems = |body: &str| -> Vec<String> {
            let doc = format!(
                r#"{{"custom": {{"authMode": "github", "accelerators": {{"phx": {{"quotaRate": 2, "env": {body}}}}}}}}}"#
            );
            load(&doc).unwrap_err().0.iter().map(|e| e.to_string()).collect()
        };
        assert_eq!(
            problems(r#"{"N": 0}"#),
            ["custom.accelerators.phx.env.N: must be a string (quote it), got an integer"]
        );
        assert_eq!(problems(r#"{"N": true, "M": null}"#).len(), 2);
        assert_eq!(
            problems(r#"{"9LIVES": "x"}"#),
            ["custom.accelerators.phx.env.9LIVES: is not an environment variable name (letters, digits, `_`, `-` and `.`, not starting with a digit)"]
        );
        assert_eq!(problems(r#"{"A=B": "x"}"#).len(), 1);
        assert_eq!(
            problems(r#"["A=1"]"#),
            ["custom.accelerators.phx.env: must be a mapping of variable names to strings, got a list"]
        );
    }

    #[test]
    fn accelerators_keep_the_values_files_order() {
        // Spawn pages preselect the first accelerator: sorting would change the default.
        let c = load(
            r#"{"custom": {"authMode": "github", "accelerators": {
                "zeta": {"quotaRate": 3}, "alpha": {"quotaRate": 2}, "mid": {"quotaRate": 1}}}}"#,
        )
        .unwrap();
        let keys: Vec<&str> = c.accelerators.keys().map(String::as_str).collect();
        assert_eq!(keys, ["zeta", "alpha", "mid"]);
        assert_eq!(
            c.rates_json().to_string(),
            r#"{"cpu":1,"zeta":3,"alpha":2,"mid":1}"#
        );
        let listed = serde_json::to_string(&crate::reads::accelerators(&c)).unwrap();
        let (z, a) = (listed.find("zeta").unwrap(), listed.find("alpha").unwrap());
        assert!(z < a, "{listed}");
    }

    #[test]
    fn refresh_rules_load() {
        let c = load(
            r#"{"custom": {"authMode": "github", "quota": {"refreshRules": {"weekly": {"enabled": true,
                "schedule": "0 0 * * 1", "action": "add", "amount": 100, "maxBalance": 500,
                "targets": {"usernamePattern": "stu"}}}}}}"#,
        )
        .unwrap();
        let r = &c.refresh_rules["weekly"];
        assert!(r.enabled);
        assert_eq!(r.params.amount, 100);
        assert_eq!(r.params.max_balance, Some(500));
        assert_eq!(r.schedule.to_string(), "0 0 * * 1");
    }
}
