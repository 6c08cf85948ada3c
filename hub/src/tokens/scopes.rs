//! A token's scopes as stored: the service scopes, and course staff's `quota:manage!group=<g>` once
//! per group, the group's name percent-encoded where it holds a space or `%` (the stored list is
//! joined by spaces), and read back into the engine's scopes.

/// Course staff's scope as `token issue --scope` names it.
pub const MANAGE: &str = "quota:manage";

/// The stored scopes of `--scope` and `--group`: `quota:manage` becomes one scope per group, and a
/// group without `quota:manage`, or `quota:manage` without a group, is refused.
pub fn with_groups(scopes: &[String], groups: &[String]) -> Result<Vec<String>, String> {
    let manage = scopes.iter().any(|s| s == MANAGE);
    if manage && groups.is_empty() {
        return Err(
            "--scope quota:manage: give the groups it manages with --group (repeat for several)".into(),
        );
    }
    if !manage && !groups.is_empty() {
        return Err("--group: only with --scope quota:manage (course staff of those groups)".into());
    }
    let mut out: Vec<String> = scopes.iter().filter(|s| *s != MANAGE).cloned().collect();
    for g in groups {
        quota_core::groups::validate_group("--group", g).map_err(|e| e.to_string())?;
        out.push(format!("{}{}", quota_core::api::SCOPE_MANAGE_PREFIX, encode(g)));
    }
    Ok(out)
}

fn encode(group: &str) -> String {
    group.replace('%', "%25").replace(' ', "%20")
}

/// A stored scope as the engine reads it (a group's name decoded).
pub fn decoded(scope: &str) -> String {
    match scope.strip_prefix(quota_core::api::SCOPE_MANAGE_PREFIX) {
        Some(g) => format!(
            "{}{}",
            quota_core::api::SCOPE_MANAGE_PREFIX,
            g.replace("%20", " ").replace("%25", "%")
        ),
        None => scope.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_become_one_scope_each_and_read_back_whole() {
        let s = with_groups(
            &["quota:manage".into(), "quota:refresh".into()],
            &["course 101".into(), "50%".into()],
        )
        .expect("scopes");
        assert_eq!(
            s,
            [
                "quota:refresh",
                "quota:manage!group=course%20101",
                "quota:manage!group=50%25"
            ]
        );
        assert!(
            s.iter().all(|x| !x.contains(' ')),
            "the stored list is joined by spaces"
        );
        assert_eq!(decoded(&s[1]), "quota:manage!group=course 101");
        assert_eq!(decoded(&s[2]), "quota:manage!group=50%");
        assert!(with_groups(&["quota:manage".into()], &[]).is_err());
        assert!(with_groups(&[], &["g".into()]).is_err());
        assert!(with_groups(&["quota:manage".into()], &["a/b".into()]).is_err());
    }
}
