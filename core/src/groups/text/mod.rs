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
/// `check_group` takes (1 to 255 bytes), at most
/// `user_groups_max` of them: what hosts send (names sorted, as hubs keep them). One pass over the
/// bytes, no call per name: in the component, checking 50 names name by name cost 3 us of a 25 us
/// gate. How many names there are; `None` is no verdict: the text then takes the checks one name
/// at a time.
fn sorted_ascii_names(text: &[u8]) -> Option<usize> {
    let mut prev: &[u8] = &[];
    let mut count = 0;
    for (i, name) in text.split(|&c| c == b'\n').enumerate() {
        let fine = !name.is_empty()
            && name.len() <= limits::GROUP_NAME_CHARS_MAX
            && name.iter().all(|&c| c.wrapping_sub(b' ') <= b'~' - b' ')
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
mod tests;
