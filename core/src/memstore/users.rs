//! Users and the ledger in memory.

use super::MemStore;
use crate::error::StoreError;
use crate::store::{Change, LedgerPage, Transaction, UserRecord, UserStore};
use crate::time::Timestamp;

impl UserStore for MemStore {
    fn get_user(&mut self, username: &str) -> Result<Option<UserRecord>, StoreError> {
        Ok(self.users.get(username).cloned())
    }

    fn put_user(&mut self, user: &UserRecord) -> Result<(), StoreError> {
        match self.users.get_mut(&user.username) {
            Some(existing) => existing.clone_from(user),
            None => {
                self.users.insert(user.username.clone(), user.clone());
            }
        }
        Ok(())
    }

    fn scan_users(&mut self, after: Option<&str>, limit: usize) -> Result<Vec<UserRecord>, StoreError> {
        Ok(super::after(&self.users, after)
            .map(|(_, u)| u)
            .take(limit)
            .cloned()
            .collect())
    }

    fn users_named(&mut self, names: &[String]) -> Result<Vec<UserRecord>, StoreError> {
        let mut names = names.to_vec();
        names.sort();
        names.dedup();
        Ok(names.iter().filter_map(|n| self.users.get(n).cloned()).collect())
    }

    fn record_changes(&mut self, changes: &[Change]) -> Result<(), StoreError> {
        for c in changes {
            self.put_user(&c.user)?;
            let id = self.transactions.len() as i64 + 1;
            self.transactions.push(c.entry.clone().with_id(id));
        }
        Ok(())
    }

    fn recent_transactions(&mut self, username: &str, limit: usize) -> Result<Vec<Transaction>, StoreError> {
        let mut out: Vec<Transaction> = self
            .transactions
            .iter()
            .filter(|t| t.username == username && t.budget.is_none())
            .cloned()
            .collect();
        out.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
        out.truncate(limit);
        Ok(out)
    }

    fn scan_transactions(&mut self, page: &LedgerPage<'_>) -> Result<Vec<Transaction>, StoreError> {
        let (username, since, until) = (page.username, page.since, page.until);
        let (after_id, limit) = (page.after_id, page.limit);
        let start = usize::try_from(after_id.max(0)).unwrap_or(usize::MAX);
        Ok(self
            .transactions
            .iter()
            .skip(start)
            .filter(|t| match (username, page.budget) {
                (u, Some(b)) => t.budget.as_deref() == Some(b) && u.is_none_or(|u| t.username == u),
                (Some(u), None) => t.budget.is_none() && t.username == u,
                (None, None) => true,
            })
            .filter(|t| since <= t.created_at && t.created_at < until)
            .take(limit)
            .cloned()
            .collect())
    }

    fn user_transactions(
        &mut self,
        username: &str,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<Transaction>, StoreError> {
        Ok(self
            .transactions
            .iter()
            .rev()
            .filter(|t| t.username == username && t.budget.is_none() && before.is_none_or(|b| t.id < b))
            .take(limit)
            .cloned()
            .collect())
    }

    fn added_to_members(
        &mut self,
        created_by: &str,
        group: &str,
        from: Timestamp,
        until: Timestamp,
    ) -> Result<i64, StoreError> {
        let memberships = &self.memberships;
        let member = |u: &str| memberships.get(u).is_some_and(|m| m.groups.contains(group));
        Ok(self
            .transactions
            .iter()
            .filter(|t| t.budget.is_none() && member(&t.username))
            .filter(|t| added_by(t, created_by, from, until))
            .map(|t| t.amount)
            .sum())
    }

    fn added_to_budget(
        &mut self,
        created_by: &str,
        budget: &str,
        from: Timestamp,
        until: Timestamp,
    ) -> Result<i64, StoreError> {
        Ok(self
            .transactions
            .iter()
            .filter(|t| t.budget.as_deref() == Some(budget) && t.username.is_empty())
            .filter(|t| added_by(t, created_by, from, until))
            .map(|t| t.amount)
            .sum())
    }
}

/// Whether `t` is an addition `created_by` made within `from..until`.
fn added_by(t: &Transaction, created_by: &str, from: Timestamp, until: Timestamp) -> bool {
    t.amount > 0
        && t.created_by.as_deref() == Some(created_by)
        && from <= t.created_at
        && t.created_at < until
}
