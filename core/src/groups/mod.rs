//! Groups: each user's groups as the host last reported them (membership is the host's input; the
//! engine never invents it), and what the admin routes do with them.
//!
//! A user's groups are one stored row ([`Membership`]); a user with no row is in no group. Group
//! views (members of a group, every group) scan the rows page by page: admin calls, not hot paths.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::error::QuotaError;

mod names;
pub mod settings;
pub mod text;
use crate::limits;
use crate::names::normalize_username;
pub use crate::store::Membership;
use crate::store::Store;
use crate::time::Timestamp;
pub use names::{validate_group, validate_groups};
pub use settings::{GroupRules, GroupSettings, StaffAllowance};
pub use text::{GroupNames, GroupSet, ReportedGroups};

/// A user's stored groups (none when never reported).
pub fn of(store: &mut dyn Store, username: &str) -> Result<BTreeSet<String>, QuotaError> {
    Ok(store
        .get_membership(username)?
        .map(|m| m.groups)
        .unwrap_or_default())
}

/// Stores `groups` as `username`'s when they differ from what is stored; returns whether they did.
pub fn report(
    store: &mut dyn Store,
    username: &str,
    groups: &BTreeSet<String>,
    now: Timestamp,
) -> Result<bool, QuotaError> {
    Ok(store.put_membership(username, groups, now)?)
}

/// Every member of `group`, by username, read a page at a time.
pub fn members(store: &mut dyn Store, group: &str) -> Result<Vec<String>, QuotaError> {
    let mut out: Vec<String> = Vec::new();
    loop {
        let after = out.last().map_or("", String::as_str).to_string();
        let page = store.scan_group(group, &after, limits::SCAN_PAGE_USERS)?;
        let full = page.len() == limits::SCAN_PAGE_USERS;
        out.extend(page);
        if !full {
            return Ok(out);
        }
    }
}

/// Visits every stored membership, by username, a page at a time.
fn each_membership(
    store: &mut dyn Store,
    mut f: impl FnMut(&mut dyn Store, String, Membership) -> Result<(), QuotaError>,
) -> Result<(), QuotaError> {
    let mut after: Option<String> = None;
    loop {
        let page = store.scan_memberships(after.as_deref(), limits::SCAN_PAGE_USERS)?;
        let full = page.len() == limits::SCAN_PAGE_USERS;
        after = page.last().map(|(u, _)| u.clone());
        for (u, m) in page {
            f(store, u, m)?;
        }
        if !full {
            return Ok(());
        }
    }
}

/// One group as the admin routes show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GroupView {
    pub name: String,
    /// Members, by username.
    pub members: Vec<String>,
    /// `custom.quota.groups.<name>.defaultQuota`, if set.
    #[serde(rename = "defaultQuota")]
    pub default_quota: Option<i64>,
    /// `custom.quota.groups.<name>.accelerators` (empty when the group restricts none).
    pub accelerators: Vec<String>,
}

/// A group's members and settings. A group with no member and no settings does not exist (404).
pub fn show(rules: &GroupRules, store: &mut dyn Store, name: &str) -> Result<GroupView, QuotaError> {
    let name = validate_group("name", name)?;
    let members = members(store, &name)?;
    let settings = rules.settings.get(&name);
    if members.is_empty() && settings.is_none() {
        return Err(QuotaError::NotFound(format!("No group named `{name}`")));
    }
    Ok(GroupView {
        default_quota: settings.and_then(|s| s.default_quota),
        accelerators: settings.map(|s| s.accelerators.clone()).unwrap_or_default(),
        name,
        members,
    })
}

/// A line of the group list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GroupSummary {
    pub name: String,
    pub members: u64,
    /// The values file has settings for it.
    pub configured: bool,
}

/// Every group with at least one member or settings, by name.
pub fn list(rules: &GroupRules, store: &mut dyn Store) -> Result<Vec<GroupSummary>, QuotaError> {
    let mut counts: BTreeMap<String, u64> = rules.settings.keys().map(|g| (g.clone(), 0)).collect();
    counts.extend(store.group_counts()?);
    Ok(counts
        .into_iter()
        .map(|(name, members)| GroupSummary {
            configured: rules.settings.contains_key(&name),
            name,
            members,
        })
        .collect())
}

/// How a group's members change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemberChange {
    /// Exactly these members (everyone else leaves the group).
    Set(BTreeSet<String>),
    Add(BTreeSet<String>),
    Remove(BTreeSet<String>),
}

/// Usernames from a list (`field[i]` names a bad one), normalised; duplicates collapse.
pub fn usernames<'a>(
    field: &str,
    names: impl IntoIterator<Item = &'a str>,
) -> Result<BTreeSet<String>, QuotaError> {
    names
        .into_iter()
        .enumerate()
        .map(|(i, n)| normalize_username(&format!("{field}[{i}]"), n))
        .collect()
}

/// What a change did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Changed {
    pub name: String,
    pub added: u64,
    pub removed: u64,
    pub members: u64,
}

/// Changes group `name`'s members; each user whose groups change gets them with time `now`.
pub fn change_members(
    store: &mut dyn Store,
    name: &str,
    change: &MemberChange,
    now: Timestamp,
) -> Result<Changed, QuotaError> {
    let name = validate_group("name", name)?;
    let mut out = Changed {
        name: name.clone(),
        added: 0,
        removed: 0,
        members: 0,
    };
    let current: BTreeSet<String> = members(store, &name)?.into_iter().collect();
    let (joining, leaving): (Vec<&String>, Vec<&String>) = match change {
        MemberChange::Set(m) => (m.difference(&current).collect(), current.difference(m).collect()),
        MemberChange::Add(m) => (m.difference(&current).collect(), Vec::new()),
        MemberChange::Remove(m) => (Vec::new(), m.intersection(&current).collect()),
    };
    for (users, join) in [(&joining, true), (&leaving, false)] {
        for u in users.iter() {
            let mut m = store.get_membership(u)?.unwrap_or_default();
            if join {
                m.groups.insert(name.clone());
            } else {
                m.groups.remove(&name);
            }
            store.put_membership(u, &m.groups, now)?;
        }
    }
    out.added = joining.len() as u64;
    out.removed = leaving.len() as u64;
    out.members = current.len() as u64 + out.added - out.removed;
    Ok(out)
}

/// What a snapshot changed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Replaced {
    /// Users whose groups changed.
    pub changed: u64,
    /// Users in at least one group after it.
    pub users: u64,
}

/// Validates a snapshot given as (username, groups) pairs: names normalised and checked, each user
/// once; a problem names `users[i]`.
pub fn snapshot<'a>(
    entries: impl IntoIterator<Item = (&'a str, Vec<&'a str>)>,
) -> Result<BTreeMap<String, BTreeSet<String>>, QuotaError> {
    let mut out = BTreeMap::new();
    for (i, (user, groups)) in entries.into_iter().enumerate() {
        let field = format!("users[{i}]");
        let name = normalize_username(&format!("{field}.username"), user)?;
        let set = validate_groups(&format!("{field}.groups"), groups)?;
        if out.insert(name.clone(), set).is_some() {
            return Err(QuotaError::invalid(
                &field,
                format!("names user `{name}` again (usernames are compared in lower case)"),
            ));
        }
    }
    Ok(out)
}

/// Sets every listed user's groups to exactly the listed ones. `complete`: the list is the whole
/// truth, so a user it leaves out is in no group afterwards.
pub fn replace(
    store: &mut dyn Store,
    users: &BTreeMap<String, BTreeSet<String>>,
    complete: bool,
    now: Timestamp,
) -> Result<Replaced, QuotaError> {
    let mut out = Replaced::default();
    // A page of users per store call: a store with set-based statements writes a page in a few
    // (issue 36), where it took a statement or more per user.
    let empty = BTreeSet::new();
    if complete {
        let mut emptied = Vec::new();
        each_membership(store, |_, u, m| {
            if !m.groups.is_empty() && !users.contains_key(&u) {
                emptied.push(u);
            }
            Ok(())
        })?;
        for page in emptied.chunks(limits::SCAN_PAGE_USERS) {
            let page: Vec<(&str, &BTreeSet<String>)> = page.iter().map(|u| (u.as_str(), &empty)).collect();
            out.changed += store.put_memberships(&page, now)?;
        }
    }
    let all: Vec<(&str, &BTreeSet<String>)> = users.iter().map(|(u, g)| (u.as_str(), g)).collect();
    for page in all.chunks(limits::SCAN_PAGE_USERS) {
        out.changed += store.put_memberships(page, now)?;
    }
    out.users = users.values().filter(|g| !g.is_empty()).count() as u64;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memstore::MemStore;
    use crate::store::GroupStore;

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn group_names_are_checked_and_kept_as_given() {
        assert_eq!(validate_group("g", "Course-101").unwrap(), "Course-101");
        assert_eq!(validate_group("g", "org:team a").unwrap(), "org:team a");
        // At the edges of the ASCII fast path and beyond it.
        // Names are data: a Keycloak path, spaces of every kind anywhere, separators, `%`.
        for good in [
            "~",
            "a b",
            &"x".repeat(255),
            &"é".repeat(255),
            "\u{e9}t\u{e9}",
            "/course/101",
            "a/b",
            " lead",
            "trail ",
            "\u{a0}nbsp",
            "g\u{a0}quota:admin",
            "Physics\u{3000}101",
            "a,b!c=d%20",
        ] {
            assert_eq!(validate_group("g", good).unwrap(), good);
        }
        let too_long = "x".repeat(256);
        let bad_ones = [
            "",
            "nul\u{0}",
            "tab\t",
            "line\nbreak",
            "del\u{7f}",
            "c1\u{85}",
            &too_long,
        ];
        for bad in bad_ones {
            let e = validate_group("groups[0]", bad).unwrap_err();
            assert!(e.to_string().starts_with("groups[0]: "), "{bad:?}: {e}");
        }
    }

    #[test]
    fn a_report_is_written_only_when_it_changes() {
        let mut s = MemStore::new();
        assert!(
            !report(&mut s, "a", &set(&[]), Timestamp(1)).unwrap(),
            "none stays none"
        );
        assert!(report(&mut s, "a", &set(&["x"]), Timestamp(2)).unwrap());
        assert!(!report(&mut s, "a", &set(&["x"]), Timestamp(3)).unwrap());
        assert_eq!(s.get_membership("a").unwrap().unwrap().since, Timestamp(2));
        assert!(
            report(&mut s, "a", &set(&[]), Timestamp(4)).unwrap(),
            "leaving every group"
        );
        assert_eq!(of(&mut s, "a").unwrap(), set(&[]));
    }

    #[test]
    fn set_add_and_remove_members() {
        let mut s = MemStore::new();
        let t = Timestamp(5);
        let r = change_members(&mut s, "lab", &MemberChange::Set(set(&["a", "b"])), t).unwrap();
        assert_eq!((r.added, r.removed, r.members), (2, 0, 2));
        report(&mut s, "c", &set(&["other"]), t).unwrap();
        let r = change_members(&mut s, "lab", &MemberChange::Set(set(&["b", "c"])), t).unwrap();
        assert_eq!((r.added, r.removed, r.members), (1, 1, 2));
        assert_eq!(of(&mut s, "c").unwrap(), set(&["lab", "other"]));
        let r = change_members(&mut s, "lab", &MemberChange::Remove(set(&["c", "zed"])), t).unwrap();
        assert_eq!((r.added, r.removed, r.members), (0, 1, 1));
        let r = change_members(&mut s, "lab", &MemberChange::Add(set(&["b", "d"])), t).unwrap();
        assert_eq!((r.added, r.removed, r.members), (1, 0, 2));
        let l = list(&GroupRules::default(), &mut s).unwrap();
        let names: Vec<(&str, u64)> = l.iter().map(|g| (g.name.as_str(), g.members)).collect();
        assert_eq!(names, [("lab", 2), ("other", 1)]);
    }

    #[test]
    fn a_complete_snapshot_empties_everyone_it_leaves_out() {
        let mut s = MemStore::new();
        let t = Timestamp(1);
        report(&mut s, "a", &set(&["x"]), t).unwrap();
        report(&mut s, "b", &set(&["y"]), t).unwrap();
        let snap: BTreeMap<String, BTreeSet<String>> =
            [("b".to_string(), set(&["y"])), ("c".to_string(), set(&["x"]))].into();
        let r = replace(&mut s, &snap, false, t).unwrap();
        assert_eq!((r.changed, r.users), (1, 2));
        assert_eq!(
            of(&mut s, "a").unwrap(),
            set(&["x"]),
            "not complete: a keeps its groups"
        );
        let r = replace(&mut s, &snap, true, t).unwrap();
        assert_eq!((r.changed, r.users), (1, 2));
        assert_eq!(of(&mut s, "a").unwrap(), set(&[]));
    }
}
