//! Budgets over SQL: their statements and `BudgetStore`.

use quota_core::store::{BudgetChange, BudgetRow, BudgetStore, Session, Transaction};
use quota_core::{StoreError, Timestamp};

use super::bridge::SqlStore;
use super::rows::{all, budget, budget_params, first, limit, name_and_int, session, transaction};
use super::sql::Sql;
use crate::sql_json::Params;

const GET_BUDGET: Sql = same!(concat!(
    "SELECT ",
    budget_columns!(),
    " FROM budgets WHERE name = $1"
));
/// The same, locking the row until the transaction ends (a start charging the budget).
const LOCK_BUDGET: Sql = each!(
    // The write transaction already holds the database's one write lock.
    sqlite: GET_BUDGET.sqlite,
    // A start charging a budget locks its row first: two starts on one budget wait for each other
    // (its reservations and its check one step), instead of both failing to serialize.
    postgres: concat!("SELECT ", budget_columns!(), " FROM budgets WHERE name = $1 FOR UPDATE"),
);
/// (name, balance, updated at, definition): inserts or replaces the row.
const PUT_BUDGET: Sql = same!(
    "INSERT INTO budgets (name, balance, updated_at, definition) VALUES ($1, $2, $3, $4)
         ON CONFLICT (name) DO UPDATE SET balance = excluded.balance, updated_at = excluded.updated_at,
         definition = excluded.definition"
);
const DELETE_BUDGET: Sql = same!("DELETE FROM budgets WHERE name = $1");
/// A deleted budget's grants go with it.
const DELETE_BUDGET_GRANTS: Sql = same!("DELETE FROM grants WHERE username = '' AND budget = $1");
/// Up to `$2` budget rows named after `$1` (`''`: from the first), by name.
const SCAN_BUDGETS: Sql = same!(concat!(
    "SELECT ",
    budget_columns!(),
    " FROM budgets WHERE name > $1 ORDER BY name LIMIT $2"
));
/// The active sessions charging budget `$1`.
const BUDGET_SESSIONS: Sql = same!(concat!(
    "SELECT ",
    session_columns!(),
    " FROM sessions WHERE budget = $1 AND status = 'active' ORDER BY id"
));
// Two statements each, not `$2 IS NULL OR username = $2`: the OR keeps SQLite from the member's
// index (measured: the gate with a member limit 240x slower than without).
/// One integer: what the billable active sessions charging `$1` hold.
const BUDGET_HELD: Sql = same!(
    "SELECT COALESCE(SUM(estimated_cost_milli), 0)::bigint FROM sessions WHERE budget = $1
         AND status = 'active' AND billable = 1"
);
/// The same, only user `$2`'s.
const BUDGET_MEMBER_HELD: Sql = same!(
    "SELECT COALESCE(SUM(estimated_cost_milli), 0)::bigint FROM sessions WHERE username = $2
         AND status = 'active' AND budget = $1 AND billable = 1"
);
/// (username, credits) of budget `$1`'s usage since `$2`.
const BUDGET_SPENT: Sql = same!(
    "SELECT username, (-SUM(amount))::bigint FROM transactions WHERE budget = $1
         AND transaction_type = 'usage' AND created_at >= $2 GROUP BY username ORDER BY username"
);
/// The same, only user `$3`'s.
const BUDGET_MEMBER_SPENT: Sql = same!(
    "SELECT username, (-SUM(amount))::bigint FROM transactions WHERE budget = $1
         AND username = $3 AND created_at >= $2 AND transaction_type = 'usage' GROUP BY username"
);
/// Budget `$1`'s newest transactions, at most `$2`.
const RECENT_BUDGET_TRANSACTIONS: Sql = same!(concat!(
    "SELECT ",
    transaction_columns!(),
    " FROM transactions WHERE budget = $1 ORDER BY created_at DESC, id DESC LIMIT $2"
));

impl BudgetStore for SqlStore {
    fn get_budget(&mut self, name: &str) -> Result<Option<BudgetRow>, StoreError> {
        first(self.query(&GET_BUDGET, Params::new().text(name))?, budget)
    }

    fn lock_budget(&mut self, name: &str) -> Result<Option<BudgetRow>, StoreError> {
        first(self.query(&LOCK_BUDGET, Params::new().text(name))?, budget)
    }

    fn put_budget(&mut self, b: &BudgetRow) -> Result<(), StoreError> {
        self.write_budget(b)
    }

    fn delete_budget(&mut self, name: &str) -> Result<(), StoreError> {
        self.query(&DELETE_BUDGET_GRANTS, Params::new().text(name))?;
        self.query(&DELETE_BUDGET, Params::new().text(name)).map(drop)
    }

    fn scan_budgets(&mut self, after: Option<&str>, n: usize) -> Result<Vec<BudgetRow>, StoreError> {
        // Every budget's name is not empty, so `''` starts from the first.
        let p = Params::new().text(after.unwrap_or("")).int(limit(n))?;
        all(self.query(&SCAN_BUDGETS, p)?, budget)
    }

    fn record_budget_change(&mut self, c: &BudgetChange) -> Result<(), StoreError> {
        self.write_budget(&c.budget)?;
        self.insert_transactions(std::iter::once(&c.entry))
    }

    fn budget_sessions(&mut self, name: &str) -> Result<Vec<Session>, StoreError> {
        all(self.query(&BUDGET_SESSIONS, Params::new().text(name))?, session)
    }

    fn budget_held(&mut self, name: &str, username: Option<&str>) -> Result<i64, StoreError> {
        match username {
            None => self.one_int(&BUDGET_HELD, Params::new().text(name), "budget_held"),
            Some(u) => self.one_int(
                &BUDGET_MEMBER_HELD,
                Params::new().text(name).text(u),
                "budget_held",
            ),
        }
    }

    fn budget_spent(
        &mut self,
        name: &str,
        since: Timestamp,
        username: Option<&str>,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        let p = Params::new().text(name).int(since.seconds())?;
        let rows = match username {
            None => self.query(&BUDGET_SPENT, p)?,
            Some(u) => self.query(&BUDGET_MEMBER_SPENT, p.text(u))?,
        };
        all(rows, name_and_int)
    }

    fn recent_budget_transactions(&mut self, name: &str, n: usize) -> Result<Vec<Transaction>, StoreError> {
        let p = Params::new().text(name).int(limit(n))?;
        all(self.query(&RECENT_BUDGET_TRANSACTIONS, p)?, transaction)
    }
}

impl SqlStore {
    fn write_budget(&self, b: &BudgetRow) -> Result<(), StoreError> {
        let mut p = Params::new();
        p.begin_row();
        budget_params(&mut p, b)?;
        p.end_row();
        self.execute_many(&PUT_BUDGET, p).map(drop)
    }
}
