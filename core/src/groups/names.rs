//! Group names as JupyterHub keeps them, checked one by one or as a user's list.

use std::collections::BTreeSet;

use crate::error::QuotaError;
use crate::limits;

/// A group name as JupyterHub keeps it (compared exactly, case and all): 1 to 255 characters, no
/// control characters, no `/` (it is a path segment of the group routes), no leading or trailing
/// white space.
pub fn validate_group(field: &str, raw: &str) -> Result<String, QuotaError> {
    check_group(raw).map_err(|m| QuotaError::invalid(field, m))?;
    Ok(raw.to_string())
}

/// What is wrong with a group name, if anything (no allocation when nothing is).
fn check_group(raw: &str) -> Result<(), String> {
    if raw.is_empty() {
        return Err("must not be empty".into());
    }
    if raw.len() > limits::group_name_chars_max && raw.chars().count() > limits::group_name_chars_max {
        return Err(format!(
            "must be at most {} characters",
            limits::group_name_chars_max
        ));
    }
    if let Some(c) = raw.chars().find(|c| c.is_control() || *c == '/') {
        return Err(format!("must not contain {c:?}"));
    }
    if raw.trim() != raw {
        return Err(format!("must not begin or end with white space, got {raw:?}"));
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
        if i >= limits::user_groups_max {
            return Err(QuotaError::invalid(
                field,
                format!("must list at most {} groups", limits::user_groups_max),
            ));
        }
        check_group(n).map_err(|m| QuotaError::invalid(format!("{field}[{i}]"), m))?;
        out.insert(n.to_string());
    }
    Ok(out)
}

/// [`validate_groups`] of names the caller owns (a host's list): moved into the set, not copied.
pub fn validate_owned_groups(field: &str, names: Vec<String>) -> Result<BTreeSet<String>, QuotaError> {
    if names.len() > limits::user_groups_max {
        return Err(QuotaError::invalid(
            field,
            format!("must list at most {} groups", limits::user_groups_max),
        ));
    }
    for (i, n) in names.iter().enumerate() {
        check_group(n).map_err(|m| QuotaError::invalid(format!("{field}[{i}]"), m))?;
    }
    Ok(names.into_iter().collect())
}
