//! Memberships in memory (the index by group is the memberships themselves).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound::Included;

use super::MemStore;
use crate::error::StoreError;
use crate::store::{GroupStore, Membership};
use crate::time::Timestamp;

impl GroupStore for MemStore {
    fn get_membership(&mut self, username: &str) -> Result<Option<Membership>, StoreError> {
        Ok(self.memberships.get(username).cloned())
    }

    fn put_membership(
        &mut self,
        username: &str,
        groups: &BTreeSet<String>,
        since: Timestamp,
    ) -> Result<bool, StoreError> {
        let same = match self.memberships.get(username) {
            Some(m) => m.groups == *groups,
            None => groups.is_empty(),
        };
        if !same {
            let m = Membership {
                groups: groups.clone(),
                since,
            };
            self.memberships.insert(username.to_string(), m);
        }
        Ok(!same)
    }

    fn scan_memberships(
        &mut self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Membership)>, StoreError> {
        Ok(super::after(&self.memberships, after)
            .take(limit)
            .map(|(u, m)| (u.clone(), m.clone()))
            .collect())
    }

    fn memberships_between(
        &mut self,
        first: &str,
        last: &str,
    ) -> Result<Vec<(String, Membership)>, StoreError> {
        if first > last {
            return Ok(Vec::new());
        }
        Ok(self
            .memberships
            .range::<str, _>((Included(first), Included(last)))
            .map(|(u, m)| (u.clone(), m.clone()))
            .collect())
    }

    fn group_members_between(
        &mut self,
        groups: &BTreeSet<String>,
        first: &str,
        last: &str,
    ) -> Result<Vec<(String, String)>, StoreError> {
        if first > last {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for (u, m) in self
            .memberships
            .range::<str, _>((Included(first), Included(last)))
        {
            for g in m.groups.intersection(groups) {
                out.push((u.clone(), g.clone()));
            }
        }
        Ok(out)
    }

    fn scan_group(&mut self, group: &str, after: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        Ok(super::after(&self.memberships, Some(after))
            .filter(|(_, m)| m.groups.contains(group))
            .take(limit)
            .map(|(u, _)| u.clone())
            .collect())
    }

    fn group_counts(&mut self) -> Result<Vec<(String, u64)>, StoreError> {
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for m in self.memberships.values() {
            for g in &m.groups {
                *counts.entry(g.clone()).or_default() += 1;
            }
        }
        Ok(counts.into_iter().collect())
    }
}
