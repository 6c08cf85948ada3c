//! Budgets' rows, the sessions charging them and their spending in memory.

use std::collections::BTreeMap;

use super::MemStore;
use crate::error::StoreError;
use crate::store::{AccountKey, BudgetChange, BudgetRow, BudgetStore, Session, SessionStatus};
use crate::store::{Transaction, TransactionType};
use crate::time::Timestamp;

impl BudgetStore for MemStore {
    fn repair_budget_holds(&mut self) -> Result<Vec<crate::store::HoldsDrift>, StoreError> {
        // The reference sums the sessions at every read: nothing kept, nothing to drift.
        Ok(Vec::new())
    }

    fn get_budget(&mut self, name: &str) -> Result<Option<BudgetRow>, StoreError> {
        Ok(self.budgets.get(name).cloned())
    }

    fn put_budget(&mut self, budget: &BudgetRow) -> Result<(), StoreError> {
        self.budgets.insert(budget.name.clone(), budget.clone());
        Ok(())
    }

    fn delete_budget(&mut self, name: &str) -> Result<(), StoreError> {
        self.budgets.remove(name);
        let key = AccountKey::Budget(name.to_string());
        self.grants.retain(|_, (a, _)| *a != key);
        Ok(())
    }

    fn scan_budgets(&mut self, after: Option<&str>, limit: usize) -> Result<Vec<BudgetRow>, StoreError> {
        Ok(super::after(&self.budgets, after)
            .map(|(_, b)| b)
            .take(limit)
            .cloned()
            .collect())
    }

    fn record_budget_change(&mut self, c: &BudgetChange) -> Result<(), StoreError> {
        self.budgets.insert(c.budget.name.clone(), c.budget.clone());
        let id = self.transactions.len() as i64 + 1;
        self.transactions.push(c.entry.clone().with_id(id));
        Ok(())
    }

    fn budget_sessions(&mut self, budget: &str) -> Result<Vec<Session>, StoreError> {
        Ok(self
            .sessions
            .values()
            .filter(|s| s.status == SessionStatus::Active && s.budget.as_deref() == Some(budget))
            .cloned()
            .collect())
    }

    fn budget_held(&mut self, budget: &str, username: Option<&str>) -> Result<i64, StoreError> {
        let running = self.budget_sessions(budget)?;
        Ok(crate::account::held_on_budget(&running, budget, username))
    }

    fn budget_spent(
        &mut self,
        budget: &str,
        since: Timestamp,
        username: Option<&str>,
    ) -> Result<Vec<(String, i64)>, StoreError> {
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
        Ok(by.into_iter().collect())
    }

    fn recent_budget_transactions(
        &mut self,
        budget: &str,
        limit: usize,
    ) -> Result<Vec<Transaction>, StoreError> {
        let mut out: Vec<Transaction> = self
            .transactions
            .iter()
            .filter(|t| t.budget.as_deref() == Some(budget))
            .cloned()
            .collect();
        out.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
        out.truncate(limit);
        Ok(out)
    }
}
