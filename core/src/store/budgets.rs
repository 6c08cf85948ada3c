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

/// A budget whose running total (thousandths) differed from what its running sessions hold, as
/// the sweep's check found it (and set it right).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct HoldsDrift {
    pub budget: String,
    /// What the total said.
    pub kept: i64,
    /// What the budget's billable running sessions hold: the total now.
    pub summed: i64,
}

/// What a start charging a budget reads of it (see [`BudgetStore::budget_for_start`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BudgetForStart {
    /// The budget's row (`None`: never written).
    pub row: Option<BudgetRow>,
    /// What its billable running sessions hold (thousandths).
    pub held: i64,
    /// For the member asked about: the credits they charged it from the day asked on.
    pub member_spent: Option<i64>,
    /// `false` when the budget holds no grant with credit left: its balance is its row's, no
    /// grants to read.
    pub grants: bool,
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
    fn budget_held(&mut self, budget: &str, username: Option<&str>) -> Result<i64, StoreError>;
    /// What a start charging `budget` reads, in one read where the store can: its row (locked as
    /// [`lock_budget`](Self::lock_budget) when `lock`), what its running sessions hold, and with
    /// `member` (username, day), what that member charged it from that day on.
    fn budget_for_start(
        &mut self,
        budget: &str,
        member: Option<(&str, i64)>,
        lock: bool,
    ) -> Result<BudgetForStart, StoreError> {
        let row = if lock {
            self.lock_budget(budget)?
        } else {
            self.get_budget(budget)?
        };
        let (held, member_spent) = self.budget_totals(budget, member)?;
        Ok(BudgetForStart {
            row,
            held,
            member_spent,
            grants: true,
        })
    }
    /// [`budget_for_start`](Self::budget_for_start)'s totals, each read apart: what the budget's
    /// running sessions hold and, with `member`, the credits the member charged it since the day.
    fn budget_totals(
        &mut self,
        budget: &str,
        member: Option<(&str, i64)>,
    ) -> Result<(i64, Option<i64>), StoreError> {
        let held = self.budget_held(budget, None)?;
        let spent = match member {
            Some((u, day)) => Some(self.member_spent_since(budget, u, day)?),
            None => None,
        };
        Ok((held, spent))
    }
    /// The credits `username` charged `budget` from the start of `day` (days since the epoch, UTC)
    /// on: the gate's member limit, one read of a bounded number of rows.
    fn member_spent_since(&mut self, budget: &str, username: &str, day: i64) -> Result<i64, StoreError> {
        let since = Timestamp(day.saturating_mul(crate::time::DAY_SECONDS));
        Ok(self
            .budget_spent(budget, since, Some(username))?
            .into_iter()
            .map(|(_, c)| c)
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
    /// The budgets whose kept running total (schema 11's `budget_holds`) differs from the sums of
    /// their billable running sessions, each total set to its sum in the same write: the sweep's
    /// check that no drift outlives it (a store that keeps no totals has none).
    fn repair_budget_holds(&mut self) -> Result<Vec<HoldsDrift>, StoreError>;
}
