//! `custom.quota.groups`: per-group settings, and the rules that follow from them (who may start
//! an accelerator, what a new user is granted, what the group's course staff may add).

use std::collections::{BTreeMap, BTreeSet};

use indexmap::IndexMap;
use serde_json::Value;

use super::names::validate_group;
use super::text::GroupSet;
use crate::accelerators::{Accelerator, CPU_RESOURCE};
use crate::error::QuotaError;
use crate::json::{kind, Fields};
use crate::limits;

/// One `custom.quota.groups.<name>` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupSettings {
    /// The initial grant of a member's first start.
    pub default_quota: Option<i64>,
    /// Accelerator keys the members may start (in the values file's order).
    pub accelerators: Vec<String>,
    /// What the group's course staff may add to its members and budgets (`staffAllowance`).
    pub staff_allowance: Option<StaffAllowance>,
}

/// `custom.quota.groups.<g>.staffAllowance`: what the managers of `<g>` may add to `<g>`'s members
/// and budgets, each manager apart: in one change, and in a calendar month (UTC) in all. `None`: no
/// bound of that kind (the amount limits only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StaffAllowance {
    pub per_change: Option<i64>,
    pub per_month: Option<i64>,
}

/// Every group's settings, and which accelerators they restrict.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupRules {
    pub settings: BTreeMap<String, GroupSettings>,
    /// A restricted accelerator (named in some group's list) and the groups that may start it. One
    /// named in no list is open to everyone; CPU always is.
    pub restricted: BTreeMap<String, BTreeSet<String>>,
}

impl GroupRules {
    /// Whether a member of `groups` may start `resource` (`cpu` or an accelerator key).
    pub fn may_start(&self, resource: &str, groups: &(impl GroupSet + ?Sized)) -> bool {
        self.restricted
            .get(resource)
            .is_none_or(|allowed| groups.in_any(allowed))
    }

    /// Whether some accelerator is restricted, or some group sets `defaultQuota`: only then does a
    /// start need the user's groups.
    pub fn matter_for_start(&self) -> bool {
        !self.restricted.is_empty() || self.settings.values().any(|s| s.default_quota.is_some())
    }

    /// The initial grant of a user in `groups`: the highest `defaultQuota` among them, else
    /// `fallback` (`custom.quota.defaultQuota`).
    pub fn default_quota<'a>(&self, groups: impl IntoIterator<Item = &'a str>, fallback: i64) -> i64 {
        groups
            .into_iter()
            .filter_map(|g| self.settings.get(g)?.default_quota)
            .max()
            .unwrap_or(fallback)
    }
}

/// Reads `custom.quota.groups` (every problem with its key path). Accelerators must be configured.
pub fn read(
    v: Option<&Value>,
    accelerators: &IndexMap<String, Accelerator>,
    problems: &mut Vec<QuotaError>,
) -> GroupRules {
    let mut out = GroupRules::default();
    let path = "custom.quota.groups";
    let Some(map) = crate::values_read::mapping(v, path, "a mapping of group name to settings", problems)
    else {
        return out;
    };
    for (name, entry) in map {
        let p = format!("{path}.{name}");
        if let Err(e) = validate_group(&p, name) {
            problems.push(e);
            continue;
        }
        let mut f = Fields::new(&p, Some(entry), true);
        if !entry.is_object() {
            problems.push(QuotaError::invalid(
                &p,
                format!(
                    "must be a mapping (defaultQuota, accelerators, staffAllowance), got {}",
                    kind(entry)
                ),
            ));
            continue;
        }
        let default_quota = f.opt_int("defaultQuota", 0, limits::AMOUNT_ABS_MAX);
        let staff_allowance = allowance(&mut f);
        let ap = f.path_of("accelerators");
        let list = f
            .opt_str_list("accelerators", accelerators.len().max(1))
            .unwrap_or_default();
        let mut keys = Vec::new();
        for (i, key) in list.into_iter().enumerate() {
            let at = format!("{ap}[{i}]");
            if key == CPU_RESOURCE {
                f.problem(&at, "`cpu` is open to everyone and cannot be restricted");
            } else if !accelerators.contains_key(key) {
                let known: Vec<&str> = accelerators.keys().map(String::as_str).collect();
                f.problem(
                    &at,
                    format!("unknown accelerator `{key}` (known: {})", known.join(", ")),
                );
            } else if !keys.iter().any(|k| k == key) {
                keys.push(key.to_string());
            }
        }
        problems.extend(f.finish());
        for k in &keys {
            out.restricted.entry(k.clone()).or_default().insert(name.clone());
        }
        out.settings.insert(
            name.clone(),
            GroupSettings {
                default_quota,
                accelerators: keys,
                staff_allowance,
            },
        );
    }
    out
}

/// `staffAllowance: {perChange, perMonth}` of a group's entry (at least one of the two).
fn allowance<'a>(f: &mut Fields<'a>) -> Option<StaffAllowance> {
    let path = f.path_of("staffAllowance");
    let v = f.raw("staffAllowance")?;
    let mut a = Fields::new(&path, Some(v), false);
    if !a.is_object() {
        f.problems.append(&mut a.problems);
        return None;
    }
    let out = StaffAllowance {
        per_change: a.opt_int("perChange", 1, limits::AMOUNT_ABS_MAX),
        per_month: a.opt_int("perMonth", 1, limits::BALANCE_ABS_MAX),
    };
    if out.per_change.is_none() && out.per_month.is_none() && a.problems.is_empty() {
        a.problem(
            &path,
            "give perChange, perMonth or both (credits course staff may add)",
        );
    }
    let mut problems = a.finish();
    let bad = !problems.is_empty();
    f.problems.append(&mut problems);
    (!bad).then_some(out)
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use crate::groups::GroupNames;
    use serde_json::json;
    use std::collections::BTreeSet;

    fn config(groups: serde_json::Value) -> Result<Config, Vec<String>> {
        Config::from_values(&json!({"custom": {
            "quota": {"enabled": true, "defaultQuota": 10, "groups": groups},
            "accelerators": {
                "a100": {"displayName": "A100", "quotaRate": 10},
                "t4": {"displayName": "T4", "quotaRate": 2},
                "v100": {"displayName": "V100", "quotaRate": 5}
            }
        }}))
        .map_err(|e| e.0.iter().map(|p| p.to_string()).collect())
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn restricted_accelerators_and_grants() {
        let c = config(json!({
            "course-101": {"defaultQuota": 50, "accelerators": ["t4"]},
            "lab": {"defaultQuota": 200, "accelerators": ["a100", "t4"]},
            "staff": {}
        }))
        .unwrap();
        let g = &c.groups;
        assert!(g.matter_for_start());
        // Both forms of a user's groups answer alike.
        for (groups, t4, a100) in [
            (&[][..], false, false),
            (&["staff"][..], false, false),
            (&["staff", "course-101"][..], true, false),
            (&["course-101"][..], true, false),
            (&["lab"][..], true, true),
        ] {
            let text = GroupNames::from_names("groups", groups.iter().copied()).unwrap();
            for (r, may) in [("cpu", true), ("v100", true), ("t4", t4), ("a100", a100)] {
                assert_eq!(g.may_start(r, &set(groups)), may, "{r} for {groups:?}");
                assert_eq!(g.may_start(r, &text), may, "{r} for {groups:?} as text");
            }
        }
        assert_eq!(g.default_quota(["course-101", "lab"], 10), 200, "the highest");
        assert_eq!(g.default_quota(["staff"], 10), 10, "no group grant: the default");
        assert_eq!(g.default_quota([], 10), 10);
    }

    #[test]
    fn bad_group_settings_are_refused_with_their_key() {
        for (groups, key) in [
            (
                json!({"lab": {"accelerators": ["h100"]}}),
                "custom.quota.groups.lab.accelerators[0]: unknown accelerator `h100`",
            ),
            (
                json!({"lab": {"accelerators": ["cpu"]}}),
                "custom.quota.groups.lab.accelerators[0]: `cpu`",
            ),
            (
                json!({"a\tb": {}}),
                "custom.quota.groups.a\tb: must not contain the control character '\\t'",
            ),
            (
                json!({"lab": {"defaultQuota": "50"}}),
                "custom.quota.groups.lab.defaultQuota:",
            ),
            (
                json!({"lab": {"defaultQuota": -1}}),
                "custom.quota.groups.lab.defaultQuota:",
            ),
            (
                json!({"lab": {"acelerators": ["t4"]}}),
                "custom.quota.groups.lab.acelerators: unknown field",
            ),
            (
                json!({"lab": ["t4"]}),
                "custom.quota.groups.lab: must be a mapping",
            ),
            (json!(["lab"]), "custom.quota.groups: must be a mapping"),
            (
                json!({"lab": {"accelerators": "t4"}}),
                "custom.quota.groups.lab.accelerators: must be a list",
            ),
        ] {
            let errs = config(groups.clone()).unwrap_err();
            assert!(errs.iter().any(|e| e.starts_with(key)), "{groups}: {errs:?}");
        }
        assert!(!config(json!(null)).unwrap().groups.matter_for_start());
    }
}
