//! Users' groups as hosts report them, and the same indexed by group.

use std::collections::BTreeSet;

use crate::error::StoreError;
use crate::time::Timestamp;

/// A user's groups as the host last reported them, and since when (the row is rewritten only when
/// the set changes). No row: in no group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Membership {
    pub groups: BTreeSet<String>,
    pub since: Timestamp,
}

/// Memberships.
pub trait GroupStore {
    /// A user's groups (none when never reported).
    fn get_membership(&mut self, username: &str) -> Result<Option<Membership>, StoreError>;
    /// Writes a user's groups when they differ from the stored ones (no groups and no row: nothing
    /// to write); returns whether they did. The gate calls this with the groups a host reports at
    /// every start, so an unchanged set must cost no more than a look-up.
    fn put_membership(
        &mut self,
        username: &str,
        groups: &BTreeSet<String>,
        since: Timestamp,
    ) -> Result<bool, StoreError>;
    /// [`GroupStore::put_membership`] for each of `users` (a page of a snapshot, each username
    /// once), in as few statements as the store can; returns how many changed. The default asks one
    /// at a time.
    fn put_memberships(
        &mut self,
        users: &[(&str, &BTreeSet<String>)],
        since: Timestamp,
    ) -> Result<u64, StoreError> {
        let mut changed = 0;
        for (u, g) in users {
            changed += u64::from(self.put_membership(u, g, since)?);
        }
        Ok(changed)
    }
    /// Up to `limit` memberships with `username > after` (all when `after` is `None`), by username.
    fn scan_memberships(
        &mut self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Membership)>, StoreError>;
    /// The memberships of usernames from `first` to `last` (both included), by username: the groups
    /// of one page of the user list, in one read.
    fn memberships_between(
        &mut self,
        first: &str,
        last: &str,
    ) -> Result<Vec<(String, Membership)>, StoreError>;
    /// (username, group) for every user from `first` to `last` (both included) who is in one of
    /// `groups`, by username: what a refresh page needs of the groups its targets name, in one read.
    fn group_members_between(
        &mut self,
        groups: &BTreeSet<String>,
        first: &str,
        last: &str,
    ) -> Result<Vec<(String, String)>, StoreError>;
    /// Up to `limit` members of `group` with `username > after`, by username.
    fn scan_group(&mut self, group: &str, after: &str, limit: usize) -> Result<Vec<String>, StoreError>;
    /// Every group with at least one member, and how many, by name: one row per group.
    fn group_counts(&mut self) -> Result<Vec<(String, u64)>, StoreError>;
}
