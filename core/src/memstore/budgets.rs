//! The budgets' rows, sessions, spending and usage sums in memory: the `Store` calls of shared
//! budgets, called by `mod.rs`'s trait implementation.

use std::collections::BTreeMap;

use super::MemStore;
use crate::store::{AccountKey, BudgetChange, BudgetUsage, Grant, Session, SessionStatus, Transaction};
use crate::store::{TransactionType, Usage, UsageKey};
use crate::time::Timestamp;

impl MemStore {
    pub(super) fn budget_delete(&mut self, name: &str) {
        self.budgets.remove(name);
        let key = AccountKey::Budget(name.to_string());
        self.grants.retain(|_, (a, _)| *a != key);
    }

    pub(super) fn budget_change(&mut self, c: &BudgetChange) {
        self.budgets.insert(c.budget.name.clone(), c.budget.clone());
        let id = self.transactions.len() as i64 + 1;
        self.transactions.push(c.entry.clone().with_id(id));
    }

    pub(super) fn budget_active(&self, budget: &str) -> Vec<Session> {
        self.sessions
            .values()
            .filter(|s| s.status == SessionStatus::Active && s.budget.as_deref() == Some(budget))
            .cloned()
            .collect()
    }

    pub(super) fn budget_spent_by(
        &self,
        budget: &str,
        since: Timestamp,
        username: Option<&str>,
    ) -> Vec<(String, i64)> {
        let mut by: BTreeMap<String, i64> = BTreeMap::new();
        for t in &self.transactions {
            if t.budget.as_deref() == Some(budget)
                && t.transaction_type == TransactionType::Usage
                && t.created_at >= since
                && username.is_none_or(|u| t.username == u)
            {
                *by.entry(t.username.clone()).or_default() -= t.amount;
            }
        }
        by.into_iter().collect()
    }

    pub(super) fn budget_recent(&self, budget: &str, limit: usize) -> Vec<Transaction> {
        let mut out: Vec<Transaction> = self
            .transactions
            .iter()
            .filter(|t| t.budget.as_deref() == Some(budget))
            .cloned()
            .collect();
        out.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
        out.truncate(limit);
        out
    }

    pub(super) fn budget_usage_add(&mut self, key: &UsageKey<'_>, usage: &Usage) {
        if key.budget.is_empty() {
            return;
        }
        self.budget_usage_days
            .entry((
                key.budget.to_string(),
                key.username.to_string(),
                key.day,
                key.resource_type.to_string(),
            ))
            .or_default()
            .add(usage);
    }

    pub(super) fn budget_usage_rows(&self, first: i64, last: i64, budget: Option<&str>) -> Vec<BudgetUsage> {
        self.budget_usage_days
            .iter()
            .filter(|((b, _, day, _), _)| (first..=last).contains(day) && budget.is_none_or(|x| x == b))
            .map(|((b, u, day, r), usage)| BudgetUsage {
                budget: b.clone(),
                username: u.clone(),
                day: *day,
                resource_type: r.clone(),
                usage: *usage,
            })
            .collect()
    }

    pub(super) fn due_user_grants_page(&self, now: Timestamp, limit: usize) -> Vec<(String, Grant)> {
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
        out
    }

    pub(super) fn user_grants_in(&self, first: &str, last: &str) -> Vec<(String, Grant)> {
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
        out
    }
}
