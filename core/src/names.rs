//! Usernames and server names: normalisation and validation shared by every operation.

use crate::error::QuotaError;
use crate::limits;

/// Trims and lowercases a username, then validates it: 1-255 characters, no control characters,
/// no `/`, no whitespace. `github:login` style names are valid.
pub fn normalize_username(field: &str, raw: &str) -> Result<String, QuotaError> {
    let name = raw.trim().to_lowercase();
    if name.is_empty() {
        return Err(QuotaError::invalid(field, "must not be empty"));
    }
    if name.chars().count() > limits::USERNAME_CHARS_MAX {
        return Err(QuotaError::invalid(
            field,
            format!("must be at most {} characters", limits::USERNAME_CHARS_MAX),
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| c.is_control() || c.is_whitespace() || *c == '/')
    {
        return Err(QuotaError::invalid(field, format!("must not contain {c:?}")));
    }
    Ok(name)
}

/// A JupyterHub server name: `""` is the default server. At most 255 characters, no control
/// characters and no `/`.
pub fn validate_server_name(field: &str, raw: &str) -> Result<String, QuotaError> {
    if raw.chars().count() > limits::SERVER_NAME_CHARS_MAX {
        return Err(QuotaError::invalid(
            field,
            format!("must be at most {} characters", limits::SERVER_NAME_CHARS_MAX),
        ));
    }
    if let Some(c) = raw.chars().find(|c| c.is_control() || *c == '/') {
        return Err(QuotaError::invalid(field, format!("must not contain {c:?}")));
    }
    Ok(raw.to_string())
}

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
        NameKind::Group => crate::groups::validate_group("group", name).err()?,
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
    fn trims_and_lowercases() {
        assert_eq!(normalize_username("username", "  Alice ").unwrap(), "alice");
        assert_eq!(
            normalize_username("username", "github:Bob").unwrap(),
            "github:bob"
        );
    }

    #[test]
    fn refuses_bad_names() {
        for bad in ["", "   ", "a b", "a/b", "a\u{0}b", "tab\there", &"x".repeat(256)] {
            let err = normalize_username("username", bad).unwrap_err();
            assert!(err.to_string().starts_with("username: "), "{err}");
        }
        assert!(normalize_username("username", &"x".repeat(255)).is_ok());
    }

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
