//! Names a hub hands the engine (its users' and groups'), and which of them the engine cannot
//! take: a host skips those with a warning naming them (the `name-problems` export).

use crate::error::QuotaError;
use crate::groups::validate_group;
use crate::names::normalize_username;

/// A name a hub hands the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameKind {
    User,
    Group,
}

/// What is wrong with `name` as a user's or a group's, if anything: what a host tells an operator
/// when it skips the name.
pub fn name_problem(kind: NameKind, name: &str) -> Option<String> {
    let problem = match kind {
        NameKind::User => normalize_username("username", name).err()?,
        NameKind::Group => validate_group("group", name).err()?,
    };
    Some(match problem {
        QuotaError::Invalid { message, .. } => message,
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hubs_names_are_told_apart_from_those_the_engine_cannot_take() {
        assert_eq!(name_problem(NameKind::Group, "/course/101"), None);
        assert_eq!(name_problem(NameKind::Group, "g\u{a0}quota:admin"), None);
        assert_eq!(
            name_problem(NameKind::Group, "a\nb").as_deref(),
            Some("must not contain the control character '\\n'")
        );
        assert_eq!(name_problem(NameKind::User, "Ann"), None);
        assert_eq!(
            name_problem(NameKind::User, "ann smith").as_deref(),
            Some("must not contain ' '")
        );
        assert!(name_problem(NameKind::Group, &"x".repeat(256)).is_some());
    }
}
