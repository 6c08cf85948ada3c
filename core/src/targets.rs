//! Refresh targets: the filters that pick which users a refresh touches. All given filters AND.

use std::collections::BTreeSet;

use regex_lite::{Regex, RegexBuilder};
use serde_json::Value;

use crate::json::Fields;
use crate::limits;
use crate::names::normalize_username;
use crate::store::UserRecord;

#[derive(Clone, Debug, Default)]
pub struct Targets {
    pub include_unlimited: bool,
    pub balance_below: Option<i64>,
    pub balance_above: Option<i64>,
    pub include_users: Option<BTreeSet<String>>,
    pub exclude_users: BTreeSet<String>,
    pub username_pattern: Option<Pattern>,
    /// Members of at least one of these groups.
    pub include_groups: Option<BTreeSet<String>>,
    /// Members of none of these groups.
    pub exclude_groups: BTreeSet<String>,
    /// Budgets instead of users: the run updates these budgets' accounts (no user target then).
    pub budgets: Option<BTreeSet<String>>,
}

/// A `usernamePattern`: anchored at the start and case-insensitive, as Python's `re.match`.
#[derive(Clone, Debug)]
pub struct Pattern {
    pub text: String,
    regex: Regex,
}

impl PartialEq for Targets {
    fn eq(&self, o: &Targets) -> bool {
        self.include_unlimited == o.include_unlimited
            && self.balance_below == o.balance_below
            && self.balance_above == o.balance_above
            && self.include_users == o.include_users
            && self.exclude_users == o.exclude_users
            && self.username_pattern.as_ref().map(|p| &p.text) == o.username_pattern.as_ref().map(|p| &p.text)
            && self.include_groups == o.include_groups
            && self.exclude_groups == o.exclude_groups
            && self.budgets == o.budgets
    }
}

impl Targets {
    /// Reads a targets object (values-file and REST keys are the same). Unknown keys are problems:
    /// a typo must never widen the target set.
    pub fn read(path: &str, value: Option<&Value>, problems: &mut Vec<crate::QuotaError>) -> Targets {
        let mut f = Fields::new(path, value, true);
        let bound = limits::BALANCE_ABS_MAX;
        let mut t = Targets {
            include_unlimited: f.opt_bool("includeUnlimited").unwrap_or(false),
            balance_below: f.opt_int("balanceBelow", -bound, bound),
            balance_above: f.opt_int("balanceAbove", -bound, bound),
            ..Targets::default()
        };
        for (key, is_include) in [("includeUsers", true), ("excludeUsers", false)] {
            let p = f.path_of(key);
            let Some(list) = f.opt_str_list(key, limits::TARGET_USERS_MAX) else {
                continue;
            };
            if is_include && list.is_empty() {
                f.problem(&p, "must not be empty (omit it to target every user)");
                continue;
            }
            let mut names = BTreeSet::new();
            for (i, raw) in list.iter().enumerate() {
                match normalize_username(&format!("{p}[{i}]"), raw) {
                    Ok(n) => {
                        names.insert(n);
                    }
                    Err(e) => f.problems.push(e),
                }
            }
            if is_include {
                t.include_users = Some(names);
            } else {
                t.exclude_users = names;
            }
        }
        for (key, is_include) in [("includeGroups", true), ("excludeGroups", false)] {
            let p = f.path_of(key);
            let Some(list) = f.opt_str_list(key, limits::TARGET_GROUPS_MAX) else {
                continue;
            };
            if is_include && list.is_empty() {
                f.problem(&p, "must not be empty (omit it to target every user)");
                continue;
            }
            match crate::groups::validate_groups(&p, list) {
                Ok(names) if is_include => t.include_groups = Some(names),
                Ok(names) => t.exclude_groups = names,
                Err(e) => f.problems.push(e),
            }
        }
        t.username_pattern = pattern(&mut f);
        let bp = f.path_of("budgets");
        if let Some(list) = f.opt_str_list("budgets", limits::TARGET_GROUPS_MAX) {
            if list.is_empty() {
                f.problem(&bp, "must not be empty (omit it to target users)");
            } else {
                let mut names = BTreeSet::new();
                for (i, name) in list.iter().enumerate() {
                    match crate::budgets::definition::validate_name(&format!("{bp}[{i}]"), name) {
                        Ok(()) => {
                            names.insert(name.to_string());
                        }
                        Err(e) => f.problems.push(e),
                    }
                }
                let user_only = [
                    ("includeUsers", t.include_users.is_some()),
                    ("excludeUsers", !t.exclude_users.is_empty()),
                    ("usernamePattern", t.username_pattern.is_some()),
                    ("includeGroups", t.include_groups.is_some()),
                    ("excludeGroups", !t.exclude_groups.is_empty()),
                    (
                        "includeUnlimited",
                        value.and_then(|v| v.get("includeUnlimited")).is_some(),
                    ),
                ];
                if let Some((key, _)) = user_only.iter().find(|(_, given)| *given) {
                    f.problem(
                        &bp,
                        format!("targets budgets, so it takes no user target (`{key}` is given)"),
                    );
                }
                t.budgets = Some(names);
            }
        }
        problems.extend(f.finish());
        t
    }

    /// Whether a target names groups: only then does a refresh read the users' groups.
    pub fn uses_groups(&self) -> bool {
        self.include_groups.is_some() || !self.exclude_groups.is_empty()
    }

    /// Whether `user`, a member of `groups`, is targeted.
    pub fn matches(&self, user: &UserRecord, groups: &BTreeSet<String>) -> bool {
        (self.include_unlimited || !user.unlimited)
            && self.balance_below.is_none_or(|b| user.balance < b)
            && self.balance_above.is_none_or(|a| user.balance > a)
            && self
                .include_users
                .as_ref()
                .is_none_or(|s| s.contains(&user.username))
            && !self.exclude_users.contains(&user.username)
            && self
                .username_pattern
                .as_ref()
                .is_none_or(|p| p.regex.is_match(&user.username))
            && self
                .include_groups
                .as_ref()
                .is_none_or(|s| s.iter().any(|g| groups.contains(g)))
            && !self.exclude_groups.iter().any(|g| groups.contains(g))
    }

    /// Canonical JSON (camelCase keys, sorted lists), used to fingerprint a run's parameters.
    pub fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("includeUnlimited".into(), self.include_unlimited.into());
        if let Some(b) = self.balance_below {
            m.insert("balanceBelow".into(), b.into());
        }
        if let Some(a) = self.balance_above {
            m.insert("balanceAbove".into(), a.into());
        }
        if let Some(s) = &self.include_users {
            m.insert(
                "includeUsers".into(),
                s.iter().cloned().collect::<Vec<_>>().into(),
            );
        }
        if !self.exclude_users.is_empty() {
            m.insert(
                "excludeUsers".into(),
                self.exclude_users.iter().cloned().collect::<Vec<_>>().into(),
            );
        }
        if let Some(p) = &self.username_pattern {
            m.insert("usernamePattern".into(), p.text.clone().into());
        }
        if let Some(s) = &self.include_groups {
            m.insert(
                "includeGroups".into(),
                s.iter().cloned().collect::<Vec<_>>().into(),
            );
        }
        if !self.exclude_groups.is_empty() {
            m.insert(
                "excludeGroups".into(),
                self.exclude_groups.iter().cloned().collect::<Vec<_>>().into(),
            );
        }
        if let Some(b) = &self.budgets {
            m.insert("budgets".into(), b.iter().cloned().collect::<Vec<_>>().into());
        }
        Value::Object(m)
    }
}

/// `usernamePattern`: a regular expression matched at the start of a username, without case.
fn pattern(f: &mut Fields<'_>) -> Option<Pattern> {
    if let Some(text) = f.opt_str("usernamePattern") {
        let p = f.path_of("usernamePattern");
        if text.chars().count() > limits::PATTERN_CHARS_MAX {
            f.problem(
                &p,
                format!("must be at most {} characters", limits::PATTERN_CHARS_MAX),
            );
        } else {
            match RegexBuilder::new(&format!("^(?:{text})"))
                .case_insensitive(true)
                .build()
            {
                Ok(regex) => {
                    return Some(Pattern {
                        text: text.to_string(),
                        regex,
                    })
                }
                Err(e) => f.problem(&p, format!("is not a valid regular expression: {e}")),
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Timestamp;

    fn user(name: &str, balance: i64, unlimited: bool) -> UserRecord {
        UserRecord {
            username: name.into(),
            balance,
            unlimited,
            updated_at: Timestamp(0),
        }
    }

    impl Targets {
        fn matches_alone(&self, u: &UserRecord) -> bool {
            self.matches(u, &BTreeSet::new())
        }
    }

    fn targets(json: &str) -> Result<Targets, Vec<crate::QuotaError>> {
        let v: Value = serde_json::from_str(json).unwrap();
        let mut problems = Vec::new();
        let t = Targets::read("targets", Some(&v), &mut problems);
        if problems.is_empty() {
            Ok(t)
        } else {
            Err(problems)
        }
    }

    #[test]
    fn pattern_is_anchored_at_start_and_case_insensitive() {
        let t = targets(r#"{"usernamePattern": "STU"}"#).unwrap();
        assert!(t.matches_alone(&user("student1", 0, false)));
        assert!(!t.matches_alone(&user("xstudent", 0, false)));
        // Anchored at the start only, like re.match: a prefix match is enough.
        let t = targets(r#"{"usernamePattern": "a|b"}"#).unwrap();
        assert!(t.matches_alone(&user("bob", 0, false)));
        assert!(!t.matches_alone(&user("cab", 0, false)));
    }

    #[test]
    fn filters_and_together() {
        let t = targets(r#"{"balanceBelow": 10, "balanceAbove": 2, "excludeUsers": ["Eve"]}"#).unwrap();
        assert!(t.matches_alone(&user("bob", 5, false)));
        assert!(
            !t.matches_alone(&user("bob", 10, false)),
            "balanceBelow is strict"
        );
        assert!(!t.matches_alone(&user("bob", 2, false)), "balanceAbove is strict");
        assert!(
            !t.matches_alone(&user("eve", 5, false)),
            "exclude compares case-insensitively"
        );
        assert!(
            !t.matches_alone(&user("bob", 5, true)),
            "unlimited users excluded by default"
        );
        let t = targets(r#"{"includeUnlimited": true, "includeUsers": ["BOB"]}"#).unwrap();
        assert!(t.matches_alone(&user("bob", 5, true)));
        assert!(!t.matches_alone(&user("alice", 5, false)));
    }

    #[test]
    fn group_targets_and_with_the_others() {
        let groups = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        let t = targets(r#"{"includeGroups": ["lab", "course"], "excludeGroups": ["staff"]}"#).unwrap();
        assert!(t.uses_groups());
        assert!(t.matches(&user("a", 0, false), &groups(&["course"])));
        assert!(!t.matches(&user("a", 0, false), &groups(&[])), "in no group");
        assert!(
            !t.matches(&user("a", 0, false), &groups(&["lab", "staff"])),
            "excluded wins"
        );
        assert!(
            !t.matches(&user("a", 0, false), &groups(&["Lab"])),
            "names are exact"
        );
        let t = targets(r#"{"includeGroups": ["lab"], "balanceBelow": 5}"#).unwrap();
        assert!(!t.matches(&user("a", 9, false), &groups(&["lab"])));
        let t = targets(r#"{"excludeGroups": ["staff"]}"#).unwrap();
        assert!(t.matches(&user("a", 0, false), &groups(&[])));
        assert!(!targets("{}").unwrap().uses_groups());
    }

    #[test]
    fn bad_targets_are_refused_with_their_key() {
        for (json, field) in [
            (r#"{"includeUsers": []}"#, "targets.includeUsers"),
            (r#"{"includeuser": ["a"]}"#, "targets.includeuser"),
            (r#"{"usernamePattern": "("}"#, "targets.usernamePattern"),
            (r#"{"balanceBelow": "5"}"#, "targets.balanceBelow"),
            (r#"{"excludeUsers": [1]}"#, "targets.excludeUsers[0]"),
            (r#"[]"#, "targets"),
            (r#"{"includeGroups": []}"#, "targets.includeGroups"),
            (r#"{"excludeGroups": ["a\nb"]}"#, "targets.excludeGroups[0]"),
            (r#"{"includeGroups": "lab"}"#, "targets.includeGroups"),
        ] {
            let errs = targets(json).unwrap_err();
            assert!(
                errs[0].to_string().starts_with(&format!("{field}:")),
                "{json}: {errs:?}"
            );
        }
        let long = format!(r#"{{"usernamePattern": "{}"}}"#, "a".repeat(257));
        assert!(targets(&long).is_err());
    }
}
