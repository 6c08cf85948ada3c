//! Group names as JupyterHub keeps them, checked one by one or as a user's list.

use std::collections::BTreeSet;

use crate::error::QuotaError;
use crate::limits;

/// A group name as JupyterHub keeps it (compared exactly, case and all): 1 to 255 characters, no
/// control characters. Anything else is data: `/` (a Keycloak group path such as `/course/101`,
/// percent-encoded where it is a path segment), spaces of any kind anywhere, `,`, `!`, `=`, `%`,
/// non-ASCII letters. Hosts carry a name whole (a JSON string, a percent-encoded path segment or
/// scope filter), so no character of it can separate or mean anything.
pub fn validate_group(field: &str, raw: &str) -> Result<String, QuotaError> {
    check_group(raw).map_err(|m| QuotaError::invalid(field, m))?;
    Ok(raw.to_string())
}

/// What is wrong with a group name, if anything (no allocation when nothing is).
pub(crate) fn check_group(raw: &str) -> Result<(), String> {
    // The usual name first, in one pass over its bytes: printable ASCII, short enough in bytes.
    // Anything else takes the character by character checks.
    let b = raw.as_bytes();
    if !b.is_empty()
        && b.len() <= limits::GROUP_NAME_CHARS_MAX
        && b.iter().all(|&c| (b' '..=b'~').contains(&c))
    {
        return Ok(());
    }
    if raw.is_empty() {
        return Err("must not be empty".into());
    }
    if raw.len() > limits::GROUP_NAME_CHARS_MAX && raw.chars().count() > limits::GROUP_NAME_CHARS_MAX {
        return Err(format!(
            "must be at most {} characters",
            limits::GROUP_NAME_CHARS_MAX
        ));
    }
    if let Some(c) = raw.chars().find(|c| c.is_control()) {
        return Err(format!("must not contain the control character {c:?}"));
    }
    Ok(())
}

/// Validates a list of group names (`field[i]` names a bad one); duplicates collapse.
pub fn validate_groups<'a>(
    field: &str,
    names: impl IntoIterator<Item = &'a str>,
) -> Result<BTreeSet<String>, QuotaError> {
    let mut out = BTreeSet::new();
    for (i, n) in names.into_iter().enumerate() {
        check_listed(field, i, n)?;
        out.insert(n.to_string());
    }
    Ok(out)
}

/// The `i`th name of a user's list at `field`: a valid name, and within the list's limit.
pub(super) fn check_listed(field: &str, i: usize, name: &str) -> Result<(), QuotaError> {
    if i >= limits::USER_GROUPS_MAX {
        return Err(QuotaError::invalid(
            field,
            format!("must list at most {} groups", limits::USER_GROUPS_MAX),
        ));
    }
    check_group(name).map_err(|m| QuotaError::invalid(format!("{field}[{i}]"), m))
}
