//! A token's scopes as stored: the service scopes, and course staff's `quota:manage!group=<g>` once
//! per group, read back into the engine's scopes.
//!
//! Names are data, never syntax: the stored list is joined by ASCII spaces, so a group's name is
//! percent-encoded in it, every byte but ASCII letters, digits and `-._~:@+` (a space of any kind,
//! `,`, `!`, `=`, `/`, `%` and every non-ASCII letter among them). The list is split on the ASCII
//! space only and each group decoded whole, so no character of a name can end a scope or start
//! another. The names quota-hub 0.2 stored (only ` ` and `%` encoded) read back the same: for a
//! name of letters, digits, `-`, `_`, `.`, `:` and spaces both encodings are one text.

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

/// Whether a byte of a group's name is kept as it is in the stored scope.
fn plain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~:@+".contains(&b)
}

/// A group's name as the stored scope holds it.
pub fn encode(group: &str) -> String {
    let mut out = String::with_capacity(group.len());
    for &b in group.as_bytes() {
        if plain(b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A stored group's name decoded; `None` when it is not one `encode` (or quota-hub 0.2) wrote: a
/// `%` without two hex digits, or bytes that are not UTF-8.
fn decode(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The stored list as one text: the scopes joined by ASCII spaces.
pub fn stored(scopes: &[String]) -> String {
    scopes.join(" ")
}

/// The scopes of a stored text, split on the ASCII space only (never on another kind of space: a
/// row quota-hub 0.2 wrote with a raw U+00A0 in a group stays that one group).
pub fn parse_stored(text: &str) -> Vec<String> {
    text.split(' ')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// A stored scope as the engine reads it (a group's name decoded); `None` for a scope that cannot
/// be read back (it grants nothing).
pub fn decoded(scope: &str) -> Option<String> {
    match scope.strip_prefix(quota_core::api::SCOPE_MANAGE_PREFIX) {
        Some(g) => Some(format!("{}{}", quota_core::api::SCOPE_MANAGE_PREFIX, decode(g)?)),
        None => Some(scope.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_become_one_scope_each_and_read_back_whole() {
        let s = with_groups(
            &["quota:manage".into(), "quota:refresh".into()],
            &["course 101".into(), "50%".into(), "/course/101".into()],
        )
        .expect("scopes");
        assert_eq!(
            s,
            [
                "quota:refresh",
                "quota:manage!group=course%20101",
                "quota:manage!group=50%25",
                "quota:manage!group=%2Fcourse%2F101"
            ]
        );
        assert_eq!(parse_stored(&stored(&s)), s);
        assert_eq!(decoded(&s[1]).unwrap(), "quota:manage!group=course 101");
        assert_eq!(decoded(&s[2]).unwrap(), "quota:manage!group=50%");
        assert_eq!(decoded(&s[3]).unwrap(), "quota:manage!group=/course/101");
        assert!(with_groups(&["quota:manage".into()], &[]).is_err());
        assert!(with_groups(&[], &["g".into()]).is_err());
        assert!(with_groups(&["quota:manage".into()], &["a\nb".into()]).is_err());
    }

    #[test]
    fn no_character_of_a_group_name_ends_its_scope() {
        // The finding of issue 58: a U+00A0 in a group ended the scope when read back with
        // split_whitespace, and `quota:admin` followed as a scope of its own.
        for g in [
            "g\u{a0}quota:admin",
            "g quota:admin",
            "g\u{3000}quota:admin",
            "g\u{2028}quota:admin",
            "g,quota:admin",
            "g!group=h",
            "g=h",
            "%41",
            "Physik\u{a0}101",
        ] {
            let s = with_groups(&["quota:manage".into()], &[g.to_string()]).expect("scopes");
            let text = stored(&s);
            assert!(!text.chars().any(char::is_whitespace), "{g:?} stored as {text:?}");
            let back: Vec<String> = parse_stored(&text).iter().filter_map(|x| decoded(x)).collect();
            assert_eq!(back, [format!("quota:manage!group={g}")], "{g:?}");
        }
    }

    #[test]
    fn rows_of_quota_hub_0_2_read_back_as_they_were_meant_and_a_raw_space_widens_nothing() {
        // 0.2 encoded only ` ` and `%`: the same text `encode` writes for such names.
        assert_eq!(encode("org:team a"), "org:team%20a");
        assert_eq!(encode("50%"), "50%25");
        assert_eq!(encode("Course-101_x.y"), "Course-101_x.y");
        // A row 0.2 wrote for the group `g\u{a0}quota:admin` (the U+00A0 raw): one scope, that
        // group, never `quota:admin`.
        let row = "quota:sessions quota:manage!group=g\u{a0}quota:admin";
        let scopes: Vec<String> = parse_stored(row).iter().filter_map(|x| decoded(x)).collect();
        assert_eq!(
            scopes,
            ["quota:sessions", "quota:manage!group=g\u{a0}quota:admin"]
        );
        // Not what encode writes: the scope is dropped, never guessed at.
        assert_eq!(decoded("quota:manage!group=50%"), None);
        assert_eq!(decoded("quota:manage!group=%FF"), None);
    }
}
