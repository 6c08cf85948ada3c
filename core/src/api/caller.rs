//! Who calls: the caller a host authenticated, with the scopes that decide what it may do.

use std::collections::BTreeSet;

pub const SCOPE_SESSIONS: &str = "quota:sessions";
pub const SCOPE_REFRESH: &str = "quota:refresh";
pub const SCOPE_ADMIN: &str = "quota:admin";
/// Course staff of one group: `quota:manage!group=<g>` (one scope per group they manage).
pub const SCOPE_MANAGE_PREFIX: &str = "quota:manage!group=";

/// Who is calling, as the host authenticated them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    pub name: String,
    /// An admin user may do everything.
    pub admin: bool,
    /// Scopes: `quota:sessions`, `quota:refresh`, `quota:admin`, and `quota:manage!group=<g>` for
    /// each group whose members and budgets the caller manages (course staff).
    pub scopes: Vec<String>,
}

impl Caller {
    pub(super) fn has(&self, scope: &str) -> bool {
        self.admin || self.scopes.iter().any(|s| s == scope)
    }

    /// Whether the caller is a quota admin (every quota operation).
    pub fn is_quota_admin(&self) -> bool {
        self.has(SCOPE_ADMIN)
    }

    /// The groups the caller manages (`quota:manage!group=<g>`); empty for anyone else.
    pub fn managed_groups(&self) -> BTreeSet<String> {
        self.scopes
            .iter()
            .filter_map(|s| s.strip_prefix(SCOPE_MANAGE_PREFIX))
            .filter(|g| !g.is_empty())
            .map(str::to_string)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn managed_groups_are_the_filtered_manage_scopes_and_an_empty_filter_is_none() {
        let c = Caller {
            name: "tina".into(),
            admin: false,
            scopes: vec![
                "quota:manage!group=b".into(),
                "quota:manage!group=".into(),
                "quota:manage".into(),
                "quota:refresh".into(),
                "quota:manage!group=a b".into(),
            ],
        };
        assert_eq!(
            c.managed_groups(),
            BTreeSet::from(["a b".to_string(), "b".to_string()])
        );
        assert!(!c.is_quota_admin());
        let admin = Caller {
            scopes: vec![SCOPE_ADMIN.into()],
            ..c
        };
        assert!(admin.is_quota_admin());
    }
}
