//! A user's groups as one text: the names sorted, each once, one per line. Hosts report them in
//! this form (`start-request.groups`) and the store keeps them in it, so the spawn gate compares a
//! report with what is stored, and checks a restricted accelerator, without taking either apart
//! into a set of strings (issue 36: 50 groups made the gate 2x the plain one).

use std::collections::BTreeSet;

use super::names::check_listed;
use crate::error::QuotaError;
use crate::limits;

/// What the group rules ask of a user's groups, however they are held.
pub trait GroupSet {
    /// Whether the user is in at least one of `groups` (names compared exactly).
    fn in_any(&self, groups: &BTreeSet<String>) -> bool;
}

impl GroupSet for BTreeSet<String> {
    fn in_any(&self, groups: &BTreeSet<String>) -> bool {
        // The smaller set drives the look-ups: a user in 50 groups, an accelerator of 2.
        if groups.len() <= self.len() {
            groups.iter().any(|g| self.contains(g))
        } else {
            self.iter().any(|g| groups.contains(g))
        }
    }
}

/// Valid group names, sorted (bytewise, as a `BTreeSet<String>` orders them), each once, joined by
/// `\n`; `""` is no group. A name holds no control character, so the text splits back exactly.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupNames(String);

impl GroupNames {
    /// A host's text: names one per line, in any order, repeats ignored; `""` is no group. A bad
    /// name is `field[i]`, `i` its line in the text.
    pub fn parse(field: &str, text: String) -> Result<GroupNames, QuotaError> {
        if text.is_empty() || sorted_ascii_names(text.as_bytes()).is_some() {
            return Ok(GroupNames(text));
        }
        let mut ordered = true;
        let mut prev: Option<&str> = None;
        for (i, name) in text.split('\n').enumerate() {
            check_listed(field, i, name)?;
            ordered &= prev.is_none_or(|p| p < name);
            prev = Some(name);
        }
        if ordered {
            return Ok(GroupNames(text));
        }
        Ok(GroupNames::joined(text.split('\n').collect()))
    }

    /// A list of names, in any order, repeats ignored (`field[i]` names a bad one).
    pub fn from_names<'a>(
        field: &str,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Result<GroupNames, QuotaError> {
        let names: Vec<&str> = names.into_iter().collect();
        // Sorted ASCII names (what a hub sends) need no more than their text's one pass; a name
        // with a line break in it splits into more lines than names, and takes the checks below.
        let text = names.join("\n");
        if sorted_ascii_names(text.as_bytes()) == Some(names.len()) {
            return Ok(GroupNames(text));
        }
        for (i, name) in names.iter().enumerate() {
            check_listed(field, i, name)?;
        }
        Ok(GroupNames::joined(names))
    }

    /// A set of names already checked (a stored membership, a validated list).
    pub fn from_set(groups: &BTreeSet<String>) -> GroupNames {
        GroupNames(groups.iter().map(String::as_str).collect::<Vec<_>>().join("\n"))
    }

    /// The text a store kept of a `GroupNames` (trusted: only `as_str` texts are written).
    pub fn stored(text: String) -> GroupNames {
        GroupNames(text)
    }

    fn joined(mut names: Vec<&str>) -> GroupNames {
        names.sort_unstable();
        names.dedup();
        GroupNames(names.join("\n"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The names, sorted.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        // `"".split` would yield one empty name.
        self.0.split('\n').filter(|n| !n.is_empty())
    }

    pub fn to_set(&self) -> BTreeSet<String> {
        self.iter().map(str::to_string).collect()
    }

    /// Whether `name` is one of the lines: a binary search of the sorted text, each probe the
    /// whole line around a middle byte.
    fn has(&self, name: &[u8]) -> bool {
        let text = self.0.as_bytes();
        // `lo..hi` holds whole lines.
        let (mut lo, mut hi) = (0, text.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let start = text[lo..mid]
                .iter()
                .rposition(|&c| c == b'\n')
                .map_or(lo, |p| lo + p + 1);
            let end = text[mid..hi]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(hi, |p| mid + p);
            let line = &text[start..end];
            if line == name {
                return true;
            }
            if before(line, name) {
                lo = end + 1;
            } else if start == lo {
                return false;
            } else {
                hi = start - 1;
            }
        }
        false
    }
}

/// `a == b`, eight bytes at a time: in the component `memcmp` compares a byte at a time, and a
/// report is compared whole with the stored groups at every start.
fn same(a: &[u8], b: &[u8]) -> bool {
    let word = |c: &[u8]| u64::from_ne_bytes(c.try_into().unwrap_or_default());
    let (mut x, mut y) = (a.chunks_exact(8), b.chunks_exact(8));
    a.len() == b.len()
        && x.by_ref().zip(y.by_ref()).all(|(p, q)| word(p) == word(q))
        && x.remainder() == y.remainder()
}

/// A user's groups as a host reported them for a start (`start-request.groups`), checked only
/// when they differ from the stored ones: a hub reports every user's groups at every start, and
/// they rarely change. A report equal to the stored text (the same names, in the same canonical
/// form) is those groups, valid when they were stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportedGroups(Report);

#[derive(Clone, Debug, PartialEq, Eq)]
enum Report {
    /// Checked names (a REST body's list, a Rust caller's).
    Names(GroupNames),
    /// A host's text, not checked yet (see [`GroupNames::parse`]).
    Text(String),
}

impl ReportedGroups {
    /// A host's text: a name per line, any order, repeats ignored (checked by `changed_from`).
    pub fn text(text: String) -> ReportedGroups {
        ReportedGroups(Report::Text(text))
    }

    /// The report as its host sent it (checked names: their text).
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Report::Names(g) => g.as_str(),
            Report::Text(t) => t,
        }
    }

    /// The reported groups when they differ from `stored`; `None` when they are the same. A bad
    /// name is `field[i]` (its line in a host's text).
    pub fn changed_from(&self, field: &str, stored: &GroupNames) -> Result<Option<GroupNames>, QuotaError> {
        if same(self.as_str().as_bytes(), stored.as_str().as_bytes()) {
            return Ok(None);
        }
        let names = match &self.0 {
            Report::Names(g) => g.clone(),
            Report::Text(t) => GroupNames::parse(field, t.clone())?,
        };
        Ok((names != *stored).then_some(names))
    }
}

impl From<GroupNames> for ReportedGroups {
    fn from(names: GroupNames) -> ReportedGroups {
        ReportedGroups(Report::Names(names))
    }
}

impl GroupSet for GroupNames {
    fn in_any(&self, groups: &BTreeSet<String>) -> bool {
        groups.iter().any(|g| self.has(g.as_bytes()))
    }
}

/// Whether `text` is already sorted, each name once, every name printable ASCII that
/// `check_group` takes (no `/`, no space at either end, 1 to 255 bytes), at most
/// `user_groups_max` of them: what hosts send (names sorted, as hubs keep them). One pass over the
/// bytes, no call per name: in the component, checking 50 names name by name cost 3 us of a 25 us
/// gate. How many names there are; `None` is no verdict: the text then takes the checks one name
/// at a time.
fn sorted_ascii_names(text: &[u8]) -> Option<usize> {
    let mut prev: &[u8] = &[];
    let mut count = 0;
    for (i, name) in text.split(|&c| c == b'\n').enumerate() {
        let fine = matches!((name.first(), name.last()), (Some(&a), Some(&z)) if a != b' ' && z != b' ')
            && name.len() <= limits::GROUP_NAME_CHARS_MAX
            && name
                .iter()
                .all(|&c| c.wrapping_sub(b' ') <= b'~' - b' ' && c != b'/')
            && (i == 0 || before(prev, name))
            && i < limits::USER_GROUPS_MAX;
        if !fine {
            return None;
        }
        (prev, count) = (name, i + 1);
    }
    Some(count)
}

/// `a < b` for short names, inline: `memcmp`'s call and set-up cost more than comparing the few
/// bytes up to the first difference (the component has no vectorized `memcmp`).
fn before(a: &[u8], b: &[u8]) -> bool {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => a[i] < b[i],
        None => a.len() < b.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn every_form_is_the_sets_sorted_text() {
        let names = ["staff", "Zeta", "course-101", "staff", "äb", "a b"];
        let s = set(&names);
        let from_set = GroupNames::from_set(&s);
        assert_eq!(from_set.to_set(), s);
        assert_eq!(GroupNames::from_names("groups", names).unwrap(), from_set);
        assert_eq!(GroupNames::parse("groups", names.join("\n")).unwrap(), from_set);
        let sorted: Vec<&str> = s.iter().map(String::as_str).collect();
        assert_eq!(from_set.iter().collect::<Vec<_>>(), sorted);
        assert_eq!(from_set.as_str(), sorted.join("\n"));
        let none = GroupNames::parse("groups", String::new()).unwrap();
        assert!(none.is_empty() && none.iter().next().is_none() && none.to_set().is_empty());
        assert_eq!(none, GroupNames::from_set(&BTreeSet::new()));
    }

    #[test]
    fn both_forms_agree_on_membership() {
        let user = ["course-101", "course-1010", "lab", "Zeta", "é"];
        let text = GroupNames::from_names("groups", user).unwrap();
        let as_set = set(&user);
        for wanted in [
            &[][..],
            &["lab"],
            &["course-10"],
            &["course-10", "ourse-101", "la", "ab", "zeta"],
            &["a", "course-1010"],
            &["Zeta", "zz"],
            &["é"],
            &["e", "f", "g", "h", "i", "j", "k", "l"],
            &["lab\ncourse-101"],
        ] {
            let wanted = set(wanted);
            let expected = wanted.iter().any(|w| as_set.contains(w));
            assert_eq!(text.in_any(&wanted), expected, "{wanted:?}");
            assert_eq!(as_set.in_any(&wanted), expected, "{wanted:?}");
        }
        assert!(!GroupNames::default().in_any(&set(&["lab"])));
    }

    #[test]
    fn the_line_search_and_the_word_compare_agree_with_plain_ones() {
        let pool: Vec<String> = [
            "",
            "a",
            "ab",
            "abc",
            "b",
            "ba",
            "c",
            "course-101",
            "course-1010",
            "lab",
            "zz",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for n in 0..pool.len() {
            for skip in 0..pool.len() {
                // Every other name of the pool after `skip`, `n` at most: gaps to search for.
                let names: BTreeSet<String> = pool
                    .iter()
                    .skip(skip)
                    .step_by(2)
                    .take(n)
                    .filter(|s| !s.is_empty())
                    .cloned()
                    .collect();
                let g = GroupNames::from_set(&names);
                for probe in &pool {
                    assert_eq!(
                        g.has(probe.as_bytes()),
                        names.contains(probe),
                        "{probe:?} in {names:?}"
                    );
                }
            }
        }
        let text = "course-101\ncourse-1010\nlab";
        for i in 0..=text.len() {
            let (a, b) = (&text.as_bytes()[..i], text.as_bytes());
            assert!(same(a, a));
            assert_eq!(same(a, b), a == b, "{i}");
            let mut c = b.to_vec();
            if let Some(x) = c.get_mut(i) {
                *x ^= 1;
                assert!(!same(&c, b), "{i}");
            }
        }
    }

    #[test]
    fn a_report_is_checked_only_when_it_differs() {
        let stored = GroupNames::from_names("groups", ["lab", "staff"]).unwrap();
        let same = ReportedGroups::text("lab\nstaff".into());
        assert_eq!(same.changed_from("groups", &stored).unwrap(), None);
        let reordered = ReportedGroups::text("staff\nlab\nlab".into());
        assert_eq!(
            reordered.changed_from("groups", &stored).unwrap(),
            None,
            "the same set"
        );
        let other = ReportedGroups::text("staff".into());
        assert_eq!(
            other.changed_from("groups", &stored).unwrap(),
            Some(GroupNames::from_names("groups", ["staff"]).unwrap())
        );
        let none = ReportedGroups::text(String::new());
        assert_eq!(
            none.changed_from("groups", &stored).unwrap(),
            Some(GroupNames::default())
        );
        assert_eq!(none.changed_from("groups", &GroupNames::default()).unwrap(), None);
        let bad = ReportedGroups::text("lab\nst/aff".into());
        let e = bad.changed_from("groups", &stored).unwrap_err();
        assert!(e.to_string().starts_with("groups[1]: must not contain"), "{e}");
        let checked = ReportedGroups::from(stored.clone());
        assert_eq!(checked.as_str(), "lab\nstaff");
        assert_eq!(checked.changed_from("groups", &stored).unwrap(), None);
        assert_eq!(
            checked.changed_from("groups", &GroupNames::default()).unwrap(),
            Some(stored)
        );
    }

    #[test]
    fn a_bad_name_is_named_by_its_line() {
        let e = GroupNames::parse("groups", "lab\n\nstaff".into()).unwrap_err();
        assert_eq!(e.to_string(), "groups[1]: must not be empty");
        let e = GroupNames::parse("groups", "lab\nst\taff".into()).unwrap_err();
        assert!(e.to_string().starts_with("groups[1]: must not contain"), "{e}");
        let e = GroupNames::parse("groups", "a/b".into()).unwrap_err();
        assert!(e.to_string().starts_with("groups[0]: "), "{e}");
        let e = GroupNames::from_names("groups", ["a", "b\nc"]).unwrap_err();
        assert!(
            e.to_string().starts_with("groups[1]: must not contain '\\n'"),
            "{e}"
        );
        let e = GroupNames::from_names("groups", ["a", ""]).unwrap_err();
        assert_eq!(e.to_string(), "groups[1]: must not be empty");
        let e = GroupNames::from_names("groups", [" lab"]).unwrap_err();
        assert!(
            e.to_string().starts_with("groups[0]: must not begin or end"),
            "{e}"
        );
        let many: Vec<String> = (0..=limits::USER_GROUPS_MAX).map(|i| format!("g{i}")).collect();
        let e = GroupNames::parse("groups", many.join("\n")).unwrap_err();
        assert!(e.to_string().starts_with("groups: must list at most"), "{e}");
        let at_most: Vec<String> = many[..limits::USER_GROUPS_MAX].to_vec();
        assert_eq!(
            GroupNames::parse("groups", at_most.join("\n"))
                .unwrap()
                .iter()
                .count(),
            at_most.len()
        );
    }
}
