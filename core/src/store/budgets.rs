//! Shared budgets: each budget's row (its balance; its definition when made over REST), its
//! ledger rows and the sessions charging it.

use super::sessions::Session;
use super::users::{NewTransaction, Transaction};
use crate::error::StoreError;
use crate::time::Timestamp;

/// A budget's stored row: its balance, and its definition when it was made over REST.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BudgetRow {
    pub name: String,
    pub balance: i64,
    pub updated_at: Timestamp,
    /// The definition a `PUT` stored (canonical JSON, snake_case keys); `None` for a budget the
    /// values file defines, whose row only holds its balance.
    pub definition: Option<String>,
}

/// A budget's balance change as storage writes it: the row and its audit entry, together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BudgetChange {
    pub budget: BudgetRow,
    pub entry: NewTransaction,
}

/// Budgets.
pub trait BudgetStore {
    /// A budget's row (`None`: never written: balance 0, values-defined or unknown).
    fn get_budget(&mut self, name: &str) -> Result<Option<BudgetRow>, StoreError>;
    /// The same, held against other writers until the call's transaction ends: a start charging
    /// the budget reads its reservations after this, so concurrent starts never overspend it.
    fn lock_budget(&mut self, name: &str) -> Result<Option<BudgetRow>, StoreError> {
        self.get_budget(name)
    }
    /// Inserts or replaces a budget's row (a definition stored over REST, or its balance).
    fn put_budget(&mut self, budget: &BudgetRow) -> Result<(), StoreError>;
    /// Deletes a budget's row and its grants; its transactions stay in the ledger.
    fn delete_budget(&mut self, name: &str) -> Result<(), StoreError>;
    /// Up to `limit` stored budget rows with `name > after` (all when `None`), by name.
    fn scan_budgets(&mut self, after: Option<&str>, limit: usize) -> Result<Vec<BudgetRow>, StoreError>;
    /// Writes the budget's row and appends its transaction (one change, as `record_changes`).
    fn record_budget_change(&mut self, change: &BudgetChange) -> Result<(), StoreError>;
    /// The active sessions charging `budget`, by id.
    fn budget_sessions(&mut self, budget: &str) -> Result<Vec<Session>, StoreError>;
    /// What the billable active sessions charging `budget` hold (thousandths), only `username`'s
    /// when given: the gate's one read of a budget's reservations, however many are running.
    fn budget_held(&mut self, budget: &str, username: Option<&str>) -> Result<i64, StoreError> {
        Ok(self
            .budget_sessions(budget)?
            .iter()
            .filter(|s| s.billable && username.is_none_or(|u| s.username == u))
            .map(|s| s.estimated_cost.raw())
            .sum())
    }
    /// The credits each member charged `budget` (its `usage` transactions) with `created_at >=
    /// since`, by username; only `username`'s when given.
    fn budget_spent(
        &mut self,
        budget: &str,
        since: Timestamp,
        username: Option<&str>,
    ) -> Result<Vec<(String, i64)>, StoreError>;
    /// A budget's newest transactions, newest first (ties by id desc).
    fn recent_budget_transactions(
        &mut self,
        budget: &str,
        limit: usize,
    ) -> Result<Vec<Transaction>, StoreError>;
}
