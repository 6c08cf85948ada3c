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
}
