//! Dated grants and their `grant.expiring` warnings in memory.

use std::collections::{BTreeMap, BTreeSet};

use super::MemStore;
use crate::error::StoreError;
use crate::store::{AccountKey, Grant, GrantStore, NewGrant};
use crate::time::Timestamp;

impl GrantStore for MemStore {
    fn account_grants(&mut self, account: &AccountKey) -> Result<Vec<Grant>, StoreError> {
        Ok(self
            .grants
            .values()
            .filter(|(a, g)| a == account && g.remaining > 0)
            .map(|(_, g)| g.clone())
            .collect())
    }

    fn insert_grant(&mut self, account: &AccountKey, grant: &NewGrant) -> Result<i64, StoreError> {
        self.next_grant_id += 1;
        let g = Grant {
            grant_id: self.next_grant_id,
            amount: grant.amount,
            remaining: grant.amount,
            granted_at: grant.granted_at,
            expires_at: grant.expires_at,
        };
        self.grants.insert(g.grant_id, (account.clone(), g));
        Ok(self.next_grant_id)
    }

    fn set_grants_remaining(&mut self, changes: &[(i64, i64)]) -> Result<(), StoreError> {
        for (id, remaining) in changes {
            match self.grants.get_mut(id) {
                Some((_, g)) => g.remaining = *remaining,
                None => return Err(StoreError(format!("no grant {id}"))),
            }
        }
        Ok(())
    }

    fn due_user_credit_between(
        &mut self,
        first: &str,
        last: &str,
        now: Timestamp,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        let mut by: BTreeMap<String, i64> = BTreeMap::new();
        for (a, g) in self.grants.values() {
            if let AccountKey::User(u) = a {
                if first <= u.as_str() && u.as_str() <= last && g.due_at(now) {
                    *by.entry(u.clone()).or_default() += g.remaining;
                }
            }
        }
        Ok(by.into_iter().collect())
    }

    fn due_user_grants(&mut self, now: Timestamp, limit: usize) -> Result<Vec<(String, Grant)>, StoreError> {
        let mut out: Vec<(String, Grant)> = self
            .grants
            .values()
            .filter_map(|(a, g)| match a {
                AccountKey::User(u) if g.due_at(now) => Some((u.clone(), g.clone())),
                _ => None,
            })
            .collect();
        out.sort_by_key(|(_, g)| (g.expires_at, g.grant_id));
        out.truncate(limit);
        Ok(out)
    }

    fn user_grants_between(&mut self, first: &str, last: &str) -> Result<Vec<(String, Grant)>, StoreError> {
        let mut out: Vec<(String, Grant)> = self
            .grants
            .values()
            .filter_map(|(a, g)| match a {
                AccountKey::User(u) if u.as_str() >= first && u.as_str() <= last && g.remaining > 0 => {
                    Some((u.clone(), g.clone()))
                }
                _ => None,
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.grant_id.cmp(&b.1.grant_id)));
        Ok(out)
    }

    fn due_budgets(
        &mut self,
        now: Timestamp,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let due: BTreeSet<&String> = self
            .grants
            .values()
            .filter_map(|(a, g)| match a {
                AccountKey::Budget(b) if g.due_at(now) && after.is_none_or(|x| b.as_str() > x) => Some(b),
                _ => None,
            })
            .collect();
        Ok(due.into_iter().take(limit).cloned().collect())
    }

    fn arm_grant_warnings(&mut self, lead_seconds: i64) -> Result<(), StoreError> {
        for (_, g) in self.grants.values() {
            if g.remaining > 0 {
                self.grant_warn
                    .entry(g.grant_id)
                    .or_insert((None, Some(g.expires_at.plus_seconds(-lead_seconds))));
            }
        }
        Ok(())
    }

    fn grants_to_warn(
        &mut self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<(AccountKey, Grant, Option<i64>)>, StoreError> {
        let mut due: Vec<(Timestamp, &AccountKey, &Grant)> = self
            .grants
            .values()
            .filter(|(_, g)| g.remaining > 0 && g.expires_at > now)
            .filter_map(|(a, g)| match self.grant_warn.get(&g.grant_id) {
                Some((_, Some(at))) if *at <= now => Some((*at, a, g)),
                _ => None,
            })
            .collect();
        due.sort_by_key(|(at, _, g)| (*at, g.grant_id));
        Ok(due
            .into_iter()
            .take(limit)
            .map(|(_, a, g)| {
                let mark = self.grant_warn.get(&g.grant_id).and_then(|w| w.0);
                (a.clone(), g.clone(), mark)
            })
            .collect())
    }

    fn set_grant_warning(
        &mut self,
        id: i64,
        warned_mark: Option<i64>,
        warn_at: Timestamp,
    ) -> Result<(), StoreError> {
        self.grant_warn.insert(id, (warned_mark, Some(warn_at)));
        Ok(())
    }
}
