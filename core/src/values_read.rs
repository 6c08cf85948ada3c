//! Reading the values document's named entries (accelerators, refresh rules, groups): a mapping
//! where one is expected, an entry's key checked and its fields, each problem with its key path.

use serde_json::Value;

use crate::error::QuotaError;
use crate::json::{kind, Fields};

pub(crate) fn valid_key(field: &str, key: &str) -> Result<(), QuotaError> {
    if key.is_empty() || key.len() > 63 {
        return Err(QuotaError::invalid(field, "name must be 1 to 63 characters"));
    }
    if key
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || c == '/')
    {
        return Err(QuotaError::invalid(
            field,
            "name must not contain whitespace, control characters or `/`",
        ));
    }
    Ok(())
}

/// The mapping at `path`, if there is one: absent and `null` are none; anything else is a problem
/// (`what` says what belongs there).
pub(crate) fn mapping<'a>(
    v: Option<&'a Value>,
    path: &str,
    what: &str,
    problems: &mut Vec<QuotaError>,
) -> Option<&'a serde_json::Map<String, Value>> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m),
        Some(other) => {
            problems.push(QuotaError::invalid(
                path,
                format!("must be {what}, got {}", kind(other)),
            ));
            None
        }
    }
}

/// The fields of the entry named `key` at `path`, if the key is valid and the entry a mapping;
/// otherwise what is wrong is added to `problems`.
pub(crate) fn entry_fields<'a>(
    path: &'a str,
    key: &str,
    entry: &'a Value,
    problems: &mut Vec<QuotaError>,
) -> Option<Fields<'a>> {
    if let Err(e) = valid_key(path, key) {
        problems.push(e);
        return None;
    }
    let f = Fields::new(path, Some(entry), false);
    if !f.is_object() {
        problems.extend(f.finish_lenient());
        return None;
    }
    Some(f)
}
