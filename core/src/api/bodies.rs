//! Request bodies of the REST routes: strict JSON objects into the engine's requests, every
//! problem named by its field.

use super::*;
use crate::limits;
use crate::strict_json::StrictError;

pub(super) fn first_problem(problems: Vec<QuotaError>) -> Result<(), QuotaError> {
    match problems.into_iter().next() {
        Some(p) => Err(p),
        None => Ok(()),
    }
}

pub(super) fn parse_body(body: &str) -> Result<Value, QuotaError> {
    if body.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    let v = crate::strict_json::parse(body).map_err(|e| match e {
        StrictError::Malformed(e) => QuotaError::invalid("body", format!("malformed JSON: {e}")),
        StrictError::Duplicate(path) => {
            QuotaError::invalid(path, "appears more than once in the body; give each key once")
        }
    })?;
    if !v.is_object() {
        return Err(QuotaError::invalid(
            "body",
            format!("must be a JSON object, got {}", kind(&v)),
        ));
    }
    Ok(v)
}

/// A session id in a path: a number no row can have (not a positive integer within the values that
/// leave the engine, ±(2^53 - 1)) is simply not found, never a storage error.
pub(super) fn session_id(text: &str) -> Result<i64, QuotaError> {
    match text.parse::<i64>() {
        Ok(id) if id > 0 && id <= limits::JSON_INT_ABS_MAX && text.bytes().all(|b| b.is_ascii_digit()) => {
            Ok(id)
        }
        _ => Err(QuotaError::NotFound(format!("Session {text} not found"))),
    }
}

pub(super) fn timestamp(f: &mut Fields<'_>, key: &'static str) -> Option<Timestamp> {
    let text = f.opt_str(key)?;
    match Timestamp::parse(text) {
        Ok(t) => Some(t),
        Err(e) => {
            f.problem(key, e);
            None
        }
    }
}

pub(super) fn start_body(body: &Value) -> Result<StartRequest, QuotaError> {
    let mut f = Fields::new("", Some(body), false);
    let username = f.req_str("username");
    let resource = f.opt_str("resource_type").map(str::to_string);
    let runtime = f.req_int("runtime_minutes", i64::MIN, i64::MAX);
    let server_name = f.opt_str("server_name").unwrap_or("").to_string();
    let started_at = timestamp(&mut f, "started_at");
    let groups = f.opt_str_list("groups", limits::USER_GROUPS_MAX);
    let budget = f.opt_str("budget").map(str::to_string);
    first_problem(f.finish())?;
    let groups = groups
        .map(|g| crate::groups::GroupNames::from_names("groups", g).map(Into::into))
        .transpose()?;
    Ok(StartRequest {
        username: username.unwrap_or_default().to_string(),
        resource,
        runtime_minutes: runtime.unwrap_or_default(),
        server_name,
        started_at,
        groups,
        budget,
    })
}

pub(super) fn end_body(
    body: &Value,
    by_server: bool,
) -> Result<(Option<Timestamp>, Outcome, Option<EndTarget>), QuotaError> {
    let mut f = Fields::new("", Some(body), false);
    let ended_at = timestamp(&mut f, "ended_at");
    let outcome = match f.opt_str("outcome") {
        None | Some("completed") => Outcome::Completed,
        Some("failed") => Outcome::Failed,
        Some(other) => {
            f.problem(
                "outcome",
                format!("must be `completed` or `failed`, got `{other}`"),
            );
            Outcome::Completed
        }
    };
    let target = if by_server {
        let username = f.req_str("username").unwrap_or_default().to_string();
        let server_name = f.opt_str("server_name").unwrap_or("").to_string();
        Some(EndTarget::Server {
            username,
            server_name,
        })
    } else {
        None
    };
    first_problem(f.finish())?;
    Ok((ended_at, outcome, target))
}

/// An admin action's body: the action, its description, and `expires_at` (a dated grant).
pub(super) type AdminBody = (AdminAction, Option<String>, Option<Timestamp>);

/// A body's optional `expires_at` (RFC 3339), its problem noted in `f`.
pub(super) fn opt_expires_at(f: &mut Fields<'_>) -> Option<Timestamp> {
    match f.opt_str("expires_at").map(Timestamp::parse) {
        Some(Ok(t)) => Some(t),
        Some(Err(e)) => {
            f.problem("expires_at", e);
            None
        }
        None => None,
    }
}

pub(super) fn admin_body(body: &Value) -> Result<AdminBody, QuotaError> {
    let present = |k: &str| body.get(k).is_some_and(|v| !v.is_null());
    let mut f = Fields::new("", Some(body), false);
    let action = f.req_str("action");
    let description = f.opt_str("description").map(str::to_string);
    let expires_at = opt_expires_at(&mut f);
    let amount = f.opt_int("amount", i64::MIN, i64::MAX);
    let unlimited = f.opt_bool("unlimited");
    let parsed = match action {
        Some(a @ ("set" | "add" | "deduct")) => {
            if present("unlimited") {
                f.problem(
                    "unlimited",
                    format!("is only used with action `set_unlimited`, not `{a}`"),
                );
            }
            if !present("amount") {
                f.problem("amount", format!("is required for action `{a}`"));
            }
            amount.map(|n| match a {
                "set" => AdminAction::Set(n),
                "add" => AdminAction::Add(n),
                _ => AdminAction::Deduct(n),
            })
        }
        Some("set_unlimited") => {
            if present("amount") {
                f.problem("amount", "is not used with action `set_unlimited`");
            }
            if !present("unlimited") {
                f.problem(
                    "unlimited",
                    "is required for action `set_unlimited` (true or false)",
                );
            }
            unlimited.map(AdminAction::SetUnlimited)
        }
        Some(other) => {
            f.problem(
                "action",
                format!("must be one of set, add, deduct, set_unlimited, got `{other}`"),
            );
            None
        }
        None => None,
    };
    first_problem(f.finish())?;
    let action = parsed.ok_or_else(|| QuotaError::invalid("action", "is required"))?;
    Ok((action, description, expires_at))
}

pub(super) fn batch_body(body: &Value) -> Result<Vec<BatchItem>, QuotaError> {
    let mut f = Fields::new("", Some(body), false);
    let users = f.raw("users");
    first_problem(f.finish())?;
    let list = match users {
        Some(Value::Array(l)) => l,
        Some(other) => {
            return Err(QuotaError::invalid(
                "users",
                format!("must be a list, got {}", kind(other)),
            ))
        }
        None => return Err(QuotaError::invalid("users", "is required")),
    };
    if list.len() > limits::BATCH_USERS_MAX {
        return Err(QuotaError::invalid(
            "users",
            format!("must have at most {} entries", limits::BATCH_USERS_MAX),
        ));
    }
    // A malformed entry is a per-user failure, not a structural one: the others still apply.
    Ok(list
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let mut e = Fields::new(&format!("users[{i}]"), Some(entry), false);
            let username = e.req_str("username").map(str::to_string);
            let amount = e.opt_int("amount", i64::MIN, i64::MAX);
            let unlimited = e.opt_bool("unlimited");
            let expires_at = timestamp(&mut e, "expires_at");
            match (e.finish().into_iter().next(), username) {
                (None, Some(username)) => Ok(BatchEntry {
                    username,
                    amount,
                    unlimited,
                    expires_at,
                }),
                (problem, username) => Err(RejectedEntry {
                    username: username.unwrap_or_default(),
                    error: problem.unwrap_or_else(|| {
                        QuotaError::invalid(format!("users[{i}].username"), "is required")
                    }),
                }),
            }
        })
        .collect())
}

/// Parses a refresh REST body (`{action, amount, rule_name?, max_balance?, min_balance?, targets?,
/// run_id?, dry_run?}`), strictly.
pub fn refresh_request_from_json(body: &str) -> Result<RefreshRequest, QuotaError> {
    refresh_body(&parse_body(body)?)
}

pub(super) fn refresh_body(body: &Value) -> Result<RefreshRequest, QuotaError> {
    let mut f = Fields::new("", Some(body), false);
    let mut target_problems = Vec::new();
    let params = refresh::params_from_body(&mut f, &mut target_problems);
    let run_id = f.opt_str("run_id").map(str::to_string);
    let dry_run = f.opt_bool("dry_run").unwrap_or(false);
    let mut problems = f.finish();
    problems.extend(target_problems);
    first_problem(problems)?;
    let params = params.ok_or_else(|| QuotaError::invalid("body", "action and amount are required"))?;
    Ok(RefreshRequest {
        params,
        run_id,
        dry_run,
    })
}

/// `PUT .../groups/<name>` (`{"members": [...]}`) and `POST .../groups/<name>`
/// (`{"add": [...], "remove": [...]}`, either or both).
pub(super) fn members_body(body: &Value, replace: bool) -> Result<Vec<MemberChange>, QuotaError> {
    let mut f = Fields::new("", Some(body), false);
    let lists: &[&'static str] = if replace { &["members"] } else { &["add", "remove"] };
    let mut out = Vec::new();
    for key in lists {
        let list = if replace {
            f.raw(key)
                .is_some()
                .then(|| f.opt_str_list(key, limits::GROUP_MEMBERS_MAX))
                .flatten()
        } else {
            f.opt_str_list(key, limits::GROUP_MEMBERS_MAX)
        };
        if replace && list.is_none() && f.problems.is_empty() {
            f.problem(key, "is required (the group's members; [] to empty it)");
        }
        let Some(list) = list else { continue };
        let users = crate::groups::usernames(key, list);
        match users {
            Ok(u) if *key == "members" => out.push(MemberChange::Set(u)),
            Ok(u) if *key == "add" => out.push(MemberChange::Add(u)),
            Ok(u) => out.push(MemberChange::Remove(u)),
            Err(e) => f.problems.push(e),
        }
    }
    if !replace && out.is_empty() && f.problems.is_empty() {
        f.problem("add", "give `add`, `remove` or both (lists of usernames)");
    }
    first_problem(f.finish())?;
    Ok(out)
}

/// `PUT .../memberships`: `{"users": {"<username>": ["<group>", ...]}, "complete": bool}`.
pub(super) fn memberships_body(
    body: &Value,
) -> Result<(BTreeMap<String, BTreeSet<String>>, bool), QuotaError> {
    let mut f = Fields::new("", Some(body), false);
    let complete = f.opt_bool("complete").unwrap_or(false);
    let users = f.raw("users");
    first_problem(f.finish())?;
    let map = match users {
        Some(Value::Object(m)) => m,
        Some(other) => {
            return Err(QuotaError::invalid(
                "users",
                format!(
                    "must be a mapping of username to a list of groups, got {}",
                    kind(other)
                ),
            ))
        }
        None => return Err(QuotaError::invalid("users", "is required (username to groups)")),
    };
    let mut out = BTreeMap::new();
    for (raw, groups) in map {
        let field = crate::json::join("users", raw);
        let name = normalize_username(&field, raw)?;
        let Value::Array(items) = groups else {
            return Err(QuotaError::invalid(
                &field,
                format!("must be a list of group names, got {}", kind(groups)),
            ));
        };
        let mut names = Vec::with_capacity(items.len());
        for (i, g) in items.iter().enumerate() {
            match g {
                Value::String(s) => names.push(s.as_str()),
                other => {
                    return Err(QuotaError::invalid(
                        format!("{field}[{i}]"),
                        format!("must be a string, got {}", kind(other)),
                    ))
                }
            }
        }
        let set = crate::groups::validate_groups(&field, names)?;
        if out.insert(name.clone(), set).is_some() {
            return Err(QuotaError::invalid(
                &field,
                format!("names user `{name}` again (usernames are compared in lower case)"),
            ));
        }
    }
    Ok((out, complete))
}
