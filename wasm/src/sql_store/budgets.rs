//! Budgets over SQL: their statements and `BudgetStore`.

use quota_core::store::{BudgetChange, BudgetForStart, BudgetRow, BudgetStore, Session, Transaction};
use quota_core::{StoreError, Timestamp};

use super::bridge::SqlStore;
use super::columns::BUDGET_COLUMN_COUNT;
use super::rows::{all, budget, budget_params, first, limit, name_and_int, session, transaction};
use super::sql::Sql;
use crate::sql_json::{Columns, Params};

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
/// One integer: what the billable active sessions charging `$1` hold, as the running total the
/// triggers of schema 11 keep (`schema/holds.rs`): one row however many are running.
/// Every budget whose kept total differs from its billable running sessions' sum: the totals and the
/// sums side by side (a budget in only one of them counts 0 in the other).
const HOLDS_DRIFT: Sql = same!(
    "SELECT b, SUM(k)::bigint, SUM(s)::bigint FROM (
         SELECT budget AS b, held AS k, 0 AS s FROM budget_holds
         UNION ALL
         SELECT budget, 0, estimated_cost_milli FROM sessions
         WHERE budget IS NOT NULL AND status = 'active' AND billable = 1
     ) x GROUP BY b HAVING SUM(k) <> SUM(s) ORDER BY b"
);
/// A budget's kept total set to what its sessions hold.
const SET_HELD: Sql = same!(
    "INSERT INTO budget_holds (budget, held) VALUES ($1, $2)
         ON CONFLICT (budget) DO UPDATE SET held = excluded.held"
);
const BUDGET_HELD: Sql = same!("SELECT COALESCE(MAX(held), 0)::bigint FROM budget_holds WHERE budget = $1");
/// One integer: what member `$2`'s billable active sessions charging `$1` hold, summed from the
/// member's own running sessions (the user's index: SQLite is kept from the budget's, which would
/// read every session running on the budget, by `+budget`).
const BUDGET_MEMBER_HELD: Sql = each!(
    sqlite: "SELECT COALESCE(SUM(estimated_cost_milli), 0) FROM sessions WHERE username = ?2
         AND status = 'active' AND +budget = ?1 AND billable = 1",
    postgres: "SELECT COALESCE(SUM(estimated_cost_milli), 0)::bigint FROM sessions WHERE username = $2
         AND status = 'active' AND budget = $1 AND billable = 1",
);
/// The budget's total as a sum of its sessions: what the total must equal (the fault build checks).
#[cfg(feature = "fault-injection")]
const BUDGET_HELD_SUMMED: Sql = same!(
    "SELECT COALESCE(SUM(estimated_cost_milli), 0)::bigint FROM sessions WHERE budget = $1
         AND status = 'active' AND billable = 1"
);
/// One integer: the credits member `$2` charged budget `$1` from day `$3` on, from the member's
/// usage sums by day (at most a month of days per resource type), not the ledger's rows.
const BUDGET_MEMBER_SPENT_SINCE: Sql = same!(
    "SELECT COALESCE(SUM(credits), 0)::bigint FROM budget_usage_days WHERE budget = $1
         AND username = $2 AND day >= $3"
);
/// What a start reads of budget `$1`: its row and what its running sessions hold; with `$2` and
/// `$3`, the credits member `$2` charged it from day `$3` on (`budget_for_start`).
macro_rules! budget_for_start {
    (held) => {
        concat!(
            "SELECT ",
            budget_columns!(),
            ", ",
            budget_for_start!(total),
            ", ",
            budget_for_start!(grants),
            " FROM budgets WHERE name = $1"
        )
    };
    // What the budget's running sessions hold: the row kept by the triggers (none: nothing yet).
    (total) => {
        "COALESCE((SELECT h.held FROM budget_holds h WHERE h.budget = $1), 0)::bigint"
    };
    // 1 when the budget holds a grant with credit left (its balance then reads its grants).
    (grants) => {
        "(CASE WHEN EXISTS (SELECT 1 FROM grants g WHERE g.username = '' AND g.budget = $1
          AND g.remaining > 0) THEN 1 ELSE 0 END)::bigint"
    };
    (member) => {
        concat!(
            "SELECT ",
            budget_columns!(),
            ", ",
            budget_for_start!(total),
            ", (SELECT COALESCE(SUM(credits), 0) FROM budget_usage_days d WHERE d.budget = $1
              AND d.username = $2 AND d.day >= $3)::bigint, ",
            budget_for_start!(grants),
            " FROM budgets WHERE name = $1"
        )
    };
}
const START_READ: Sql = same!(budget_for_start!(held));
const START_READ_MEMBER: Sql = same!(budget_for_start!(member));
/// The same, locking the row (PostgreSQL; SQLite's write transaction holds the one write lock).
const START_LOCK: Sql = each!(
    sqlite: START_READ.sqlite,
    postgres: concat!(budget_for_start!(held), " FOR UPDATE OF budgets"),
);
const START_LOCK_MEMBER: Sql = each!(
    sqlite: START_READ_MEMBER.sqlite,
    postgres: concat!(budget_for_start!(member), " FOR UPDATE OF budgets"),
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
            None => {
                let held = self.one_int(&BUDGET_HELD, Params::new().text(name), "budget_held")?;
                #[cfg(feature = "fault-injection")]
                self.check_held(name, held)?;
                Ok(held)
            }
            Some(u) => self.one_int(
                &BUDGET_MEMBER_HELD,
                Params::new().text(name).text(u),
                "budget_held",
            ),
        }
    }

    fn budget_for_start(
        &mut self,
        name: &str,
        member: Option<(&str, i64)>,
        lock: bool,
    ) -> Result<BudgetForStart, StoreError> {
        let found = match member {
            None => {
                let s = if lock { &START_LOCK } else { &START_READ };
                first(self.query(s, Params::new().text(name))?, |r| {
                    let (row, rest) = r.split_at_mut(BUDGET_COLUMN_COUNT);
                    let c = Columns::new(rest, "budget_holds", 2)?;
                    Ok((budget(row)?, c.int(0)?, None, c.int(1)? != 0))
                })?
            }
            Some((u, day)) => {
                let s = if lock {
                    &START_LOCK_MEMBER
                } else {
                    &START_READ_MEMBER
                };
                first(self.query(s, Params::new().text(name).text(u).int(day)?)?, |r| {
                    let (row, rest) = r.split_at_mut(BUDGET_COLUMN_COUNT);
                    let c = Columns::new(rest, "budget_holds", 3)?;
                    Ok((budget(row)?, c.int(0)?, Some(c.int(1)?), c.int(2)? != 0))
                })?
            }
        };
        #[cfg(feature = "fault-injection")]
        if let Some((_, held, _, _)) = &found {
            self.check_held(name, *held)?;
        }
        match found {
            Some((row, held, member_spent, grants)) => Ok(BudgetForStart {
                row: Some(row),
                held,
                member_spent,
                grants,
            }),
            // No row (a budget never written): nothing to lock; its totals read apart.
            None => {
                let (held, member_spent) = self.budget_totals(name, member)?;
                Ok(BudgetForStart {
                    row: None,
                    held,
                    member_spent,
                    grants: true,
                })
            }
        }
    }

    fn member_spent_since(&mut self, name: &str, username: &str, day: i64) -> Result<i64, StoreError> {
        let p = Params::new().text(name).text(username).int(day)?;
        self.one_int(&BUDGET_MEMBER_SPENT_SINCE, p, "member_spent_since")
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

    fn repair_budget_holds(&mut self) -> Result<Vec<quota_core::store::HoldsDrift>, StoreError> {
        self.repair_holds()
    }
}

impl SqlStore {
    /// [`BudgetStore::repair_budget_holds`].
    pub(super) fn repair_holds(&self) -> Result<Vec<quota_core::store::HoldsDrift>, StoreError> {
        let found = self.query(&HOLDS_DRIFT, Params::new())?;
        let mut out = Vec::with_capacity(found.len());
        for mut row in found {
            let mut c = Columns::new(&mut row, "budget_holds", 3)?;
            out.push(quota_core::store::HoldsDrift {
                budget: c.text(0)?,
                kept: c.int(1)?,
                summed: c.int(2)?,
            });
        }
        for d in &out {
            self.execute(&SET_HELD, Params::new().text(&d.budget).int(d.summed)?)?;
        }
        Ok(out)
    }

    /// The fault build's assertion: a running total read equals the sum of its sessions.
    #[cfg(feature = "fault-injection")]
    fn check_held(&self, name: &str, held: i64) -> Result<(), StoreError> {
        let summed = self.one_int(&BUDGET_HELD_SUMMED, Params::new().text(name), "budget_held")?;
        if summed == held {
            return Ok(());
        }
        Err(StoreError(format!(
            "budget {name}: the running total holds {held}, its sessions {summed}"
        )))
    }

    fn write_budget(&self, b: &BudgetRow) -> Result<(), StoreError> {
        let mut p = Params::new();
        p.begin_row();
        budget_params(&mut p, b)?;
        p.end_row();
        self.execute_many(&PUT_BUDGET, p).map(drop)
    }
}
