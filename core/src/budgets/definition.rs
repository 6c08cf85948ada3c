//! A budget's definition (credit model 2, "Shared budgets"): who may charge it for
//! what. Read from `custom.quota.budgets.<name>` in the values file (camelCase keys), or from the
//! body of `PUT .../budgets/<name>` (snake_case keys); every problem with its key path.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::Value;

use crate::accelerators::{Accelerator, CPU_RESOURCE};
use crate::error::QuotaError;
use crate::groups::{validate_group, GroupSet};
use crate::json::{kind, Fields};
use crate::limits;
use crate::names::normalize_username;

/// Where a budget's definition comes from: the values file (read-only over REST) or the REST API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Values,
    Api,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Values => "values",
            Source::Api => "api",
        }
    }
}

/// One budget's definition.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BudgetDefinition {
    pub description: String,
    /// Members by name (normalized usernames).
    pub users: BTreeSet<String>,
    /// Members by the hub's groups, as the engine knows memberships.
    pub groups: BTreeSet<String>,
    /// The resource types it pays for (`cpu` included); `None`: all.
    pub accelerators: Option<BTreeSet<String>>,
    /// Credits one member may charge it per UTC calendar month, counting running reservations;
    /// `None`: no limit.
    pub member_limit: Option<i64>,
}

impl BudgetDefinition {
    /// Whether `username`, in `groups`, may charge this budget.
    pub fn is_member(&self, username: &str, groups: &(impl GroupSet + ?Sized)) -> bool {
        self.users.contains(username) || groups.in_any(&self.groups)
    }

    /// Whether it pays for `resource` (`cpu` or an accelerator key).
    pub fn pays_for(&self, resource: &str) -> bool {
        self.accelerators.as_ref().is_none_or(|a| a.contains(resource))
    }
}

/// The key names of one spelling: the values file's or the REST body's.
struct Keys {
    users: &'static str,
    groups: &'static str,
    accelerators: &'static str,
    member_limit: &'static str,
}

const VALUES_KEYS: Keys = Keys {
    users: "users",
    groups: "groups",
    accelerators: "accelerators",
    member_limit: "memberLimit",
};

const BODY_KEYS: Keys = Keys {
    users: "users",
    groups: "groups",
    accelerators: "accelerators",
    member_limit: "member_limit",
};

/// Checks a budget's name (as a group name) at `path`.
pub fn validate_name(path: &str, name: &str) -> Result<(), QuotaError> {
    validate_group(path, name).map(drop)
}

/// Reads `custom.quota.budgets` (every problem with its key path). Accelerators must be configured.
pub fn read(
    v: Option<&Value>,
    accelerators: &IndexMap<String, Accelerator>,
    problems: &mut Vec<QuotaError>,
) -> BTreeMap<String, Arc<BudgetDefinition>> {
    let mut out = BTreeMap::new();
    let path = "custom.quota.budgets";
    let Some(map) =
        crate::values_read::mapping(v, path, "a mapping of budget name to its definition", problems)
    else {
        return out;
    };
    if map.len() > crate::limits::BUDGETS_MAX {
        problems.push(QuotaError::invalid(
            path,
            format!(
                "at most {} budgets may be defined, found {}",
                crate::limits::BUDGETS_MAX,
                map.len()
            ),
        ));
        return out;
    }
    for (name, entry) in map {
        let p = format!("{path}.{name}");
        if let Err(e) = validate_name(&p, name) {
            problems.push(e);
            continue;
        }
        if let Some(d) = definition(&p, entry, &VALUES_KEYS, accelerators, problems) {
            out.insert(name.clone(), Arc::new(d));
        }
    }
    out
}

/// Reads the body of `PUT .../budgets/<name>`: the same definition, keys in snake_case; the whole
/// definition (a key left out is gone).
pub fn from_body(
    body: &Value,
    accelerators: &IndexMap<String, Accelerator>,
) -> Result<BudgetDefinition, QuotaError> {
    let mut problems = Vec::new();
    match definition("", body, &BODY_KEYS, accelerators, &mut problems) {
        Some(d) if problems.is_empty() => Ok(d),
        _ => Err(problems
            .into_iter()
            .next()
            .unwrap_or_else(|| QuotaError::invalid("body", "is not a budget definition"))),
    }
}

/// The canonical JSON a `PUT` stores (snake_case keys, every key present).
pub fn to_json(d: &BudgetDefinition) -> String {
    serde_json::json!({
        "description": d.description,
        "users": d.users,
        "groups": d.groups,
        "accelerators": d.accelerators,
        "member_limit": d.member_limit,
    })
    .to_string()
}

/// A stored definition read back ([`to_json`]'s text). An accelerator removed from the
/// configuration since stays listed: the budget no longer pays for anything of that name.
pub fn stored(text: &str) -> BudgetDefinition {
    #[derive(serde::Deserialize, Default)]
    #[serde(default)]
    struct Stored {
        description: String,
        users: BTreeSet<String>,
        groups: BTreeSet<String>,
        accelerators: Option<BTreeSet<String>>,
        member_limit: Option<i64>,
    }
    let s: Stored = serde_json::from_str(text).unwrap_or_default();
    BudgetDefinition {
        description: s.description,
        users: s.users,
        groups: s.groups,
        accelerators: s.accelerators,
        member_limit: s.member_limit,
    }
}

fn definition(
    p: &str,
    entry: &Value,
    keys: &Keys,
    accelerators: &IndexMap<String, Accelerator>,
    problems: &mut Vec<QuotaError>,
) -> Option<BudgetDefinition> {
    if !entry.is_object() {
        problems.push(QuotaError::invalid(
            if p.is_empty() { "body" } else { p },
            format!(
                "must be a mapping (description, {}, {}, {}, {}), got {}",
                keys.users,
                keys.groups,
                keys.accelerators,
                keys.member_limit,
                kind(entry)
            ),
        ));
        return None;
    }
    let mut f = Fields::new(p, Some(entry), true);
    let description = f.opt_str("description").unwrap_or_default().to_string();
    if description.chars().count() > limits::DESCRIPTION_CHARS_MAX {
        let at = f.path_of("description");
        f.problem(
            &at,
            format!("must be at most {} characters", limits::DESCRIPTION_CHARS_MAX),
        );
    }
    let mut users = BTreeSet::new();
    let up = f.path_of(keys.users);
    for (i, u) in f
        .opt_str_list(keys.users, limits::GROUP_MEMBERS_MAX)
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        match normalize_username(&format!("{up}[{i}]"), u) {
            Ok(name) => {
                users.insert(name);
            }
            Err(e) => problems.push(e),
        }
    }
    let mut groups = BTreeSet::new();
    let gp = f.path_of(keys.groups);
    for (i, g) in f
        .opt_str_list(keys.groups, limits::TARGET_GROUPS_MAX)
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        match validate_group(&format!("{gp}[{i}]"), g) {
            Ok(name) => {
                groups.insert(name);
            }
            Err(e) => problems.push(e),
        }
    }
    let ap = f.path_of(keys.accelerators);
    let pays = f
        .opt_str_list(keys.accelerators, accelerators.len() + 1)
        .map(|list| {
            let mut keys_seen = BTreeSet::new();
            for (i, key) in list.into_iter().enumerate() {
                if key == CPU_RESOURCE || accelerators.contains_key(key) {
                    keys_seen.insert(key.to_string());
                } else {
                    let mut known: Vec<&str> = vec![CPU_RESOURCE];
                    known.extend(accelerators.keys().map(String::as_str));
                    problems.push(QuotaError::invalid(
                        format!("{ap}[{i}]"),
                        format!("unknown accelerator `{key}` (known: {})", known.join(", ")),
                    ));
                }
            }
            keys_seen
        });
    let member_limit = match f.raw(keys.member_limit) {
        None | Some(Value::Null) => None,
        Some(_) => f.opt_int(keys.member_limit, 0, limits::AMOUNT_ABS_MAX),
    };
    problems.extend(f.finish());
    Some(BudgetDefinition {
        description,
        users,
        groups,
        accelerators: pays,
        member_limit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use serde_json::json;

    fn config(budgets: Value) -> Result<Config, Vec<String>> {
        Config::from_values(&json!({"custom": {
            "quota": {"enabled": true, "budgets": budgets},
            "accelerators": {"t4": {"displayName": "T4", "quotaRate": 2}}
        }}))
        .map_err(|e| e.0.iter().map(|p| p.to_string()).collect())
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_course_budget_by_user_and_group_for_some_resources() {
        let c = config(json!({"course-101": {
            "description": "Intro to ML, spring term",
            "users": ["Teacher"],
            "groups": ["course-101-students"],
            "accelerators": ["cpu", "t4"],
            "memberLimit": 300
        }}))
        .unwrap();
        let b = &c.budgets["course-101"];
        assert!(b.is_member("teacher", &set(&[])), "usernames are normalized");
        assert!(b.is_member("ann", &set(&["course-101-students"])));
        assert!(!b.is_member("bob", &set(&["staff"])));
        assert!(b.pays_for("cpu") && b.pays_for("t4"));
        assert_eq!(b.member_limit, Some(300));
        let open = config(json!({"lab": {"users": ["x"]}})).unwrap();
        assert!(open.budgets["lab"].pays_for("t4"), "no list: every resource");
        assert_eq!(open.budgets["lab"].member_limit, None);
    }

    #[test]
    fn bad_budgets_are_refused_with_their_key() {
        for (budgets, key) in [
            (
                json!({"lab": {"accelerators": ["h100"]}}),
                "custom.quota.budgets.lab.accelerators[0]: unknown accelerator `h100`",
            ),
            (
                json!({"lab": {"memberLimit": -1}}),
                "custom.quota.budgets.lab.memberLimit:",
            ),
            (
                json!({"lab": {"memberLimit": "5"}}),
                "custom.quota.budgets.lab.memberLimit:",
            ),
            (
                json!({"lab": {"users": ["a b"]}}),
                "custom.quota.budgets.lab.users[0]:",
            ),
            (
                json!({"lab": {"groups": ["a\u{1}b"]}}),
                "custom.quota.budgets.lab.groups[0]:",
            ),
            (
                json!({"lab": {"member_limit": 5}}),
                "custom.quota.budgets.lab.member_limit: unknown field",
            ),
            (json!({"a\tb": {}}), "custom.quota.budgets.a\tb:"),
            (json!({"lab": []}), "custom.quota.budgets.lab: must be a mapping"),
            (json!(["lab"]), "custom.quota.budgets: must be a mapping"),
        ] {
            let errs = config(budgets.clone()).unwrap_err();
            assert!(errs.iter().any(|e| e.starts_with(key)), "{budgets}: {errs:?}");
        }
    }

    #[test]
    fn a_rest_body_uses_snake_case_and_is_the_whole_definition() {
        let accelerators = config(json!(null)).unwrap().accelerators;
        let d = from_body(&json!({"users": ["ann"], "member_limit": 50}), &accelerators).unwrap();
        assert_eq!(d.member_limit, Some(50));
        assert_eq!(d.description, "");
        assert_eq!(d.accelerators, None);
        let e = from_body(&json!({"memberLimit": 50}), &accelerators).unwrap_err();
        assert!(e.to_string().starts_with("memberLimit: unknown field"), "{e}");
        let e = from_body(
            &json!({"member_limit": null, "accelerators": ["gpu"]}),
            &accelerators,
        )
        .unwrap_err();
        assert!(
            e.to_string().starts_with("accelerators[0]: unknown accelerator"),
            "{e}"
        );
    }
}
