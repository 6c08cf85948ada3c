//! The gate with a budget (credit model 2, "The gate with a budget"): checks 2 to 5 in their
//! order, each with its exact text. Check 1 (an unknown budget, a 400) is the gate's validation.
//! Every refusal records nothing; the budget's reservation and its checks are one step of the
//! caller's transaction (the store serializes writers), so concurrent starts never overspend.

use crate::groups::GroupSet;

use super::account::{balance_of, month_start, Budget};
use crate::config::Config;
use crate::error::QuotaError;
use crate::milli::Milli;
use crate::store::Store;
use crate::time::Timestamp;

/// What a start charging a budget asks.
pub struct BudgetStart<'a> {
    pub budget: &'a Budget,
    pub username: &'a str,
    pub groups: &'a dyn GroupSet,
    pub resource: &'a str,
    pub rate: Milli,
    pub runtime_minutes: i64,
    pub estimated_cost: Milli,
    /// What the member's running sessions on the budget hold (thousandths), when the caller has
    /// read them (the gate: its user's active sessions); `None`: read from the store.
    pub member_held: Option<i64>,
    /// Locks the budget's row for the check (a start or an extension, in a write transaction);
    /// `false` for a read-only quote (`/me/status`), which PostgreSQL refuses to lock.
    pub lock: bool,
}

/// A start refused for the budget's credit or a member's limit: the 403 text and the budget's
/// numbers (the gate answers them as its own refusal).
pub struct Refused {
    pub message: String,
    pub balance: i64,
    /// What running sessions hold, rounded up.
    pub held: i64,
    pub estimated_cost: Milli,
}

/// How a start charging a budget is refused: forbidden (not a member, a resource it does not pay
/// for: the 403 text alone) or refused for credit.
pub enum BudgetRefusal {
    Forbidden(String),
    Refused(Refused),
}

/// Checks 2 to 5 of a start charging a budget: the budget's balance as of now when it may start
/// (the caller records the session, whose estimated cost is then the budget's reservation), else
/// the refusal.
pub fn check_start(
    config: &Config,
    store: &mut dyn Store,
    s: &BudgetStart<'_>,
    now: Timestamp,
) -> Result<Result<i64, BudgetRefusal>, QuotaError> {
    let name = &s.budget.name;
    if !s.budget.def.is_member(s.username, s.groups) {
        return Ok(Err(BudgetRefusal::Forbidden(format!(
            "Cannot start container: {} is not a member of budget {name}.",
            s.username
        ))));
    }
    if !s.budget.def.pays_for(s.resource) {
        return Ok(Err(BudgetRefusal::Forbidden(format!(
            "Cannot start container: budget {name} does not pay for {}.",
            s.resource
        ))));
    }
    // The budget's row locked first: its reservations and this check are one serialized step. One
    // read: the row, the running totals of what its sessions hold, and the member's month when a
    // limit asks for it (each a row or a month of days, whatever the number running).
    let member = s
        .budget
        .def
        .member_limit
        .map(|_| (s.username, crate::usage::day_of(month_start(now))));
    let read = store.budget_for_start(name, member, s.lock)?;
    let balance = if read.grants {
        balance_of(store, read.row.as_ref(), name, now)?
    } else {
        read.row.as_ref().map_or(0, |r| r.balance)
    };
    let held = read.held;
    crate::invariants::held(held);
    let available = i128::from(balance) * 1000 - i128::from(held);
    let needed = i128::from(s.estimated_cost.raw()).max(i128::from(config.minimum_to_start.raw()));
    let cost = s.estimated_cost;
    if available < needed {
        let held = Milli(held);
        let balance_text = if held.raw() > 0 {
            format!("{balance} ({held} reserved by running servers)")
        } else {
            balance.to_string()
        };
        let message = format!(
            "Cannot start container: Insufficient quota in budget {name}. Current balance: {balance_text}, estimated cost: {cost} ({} quota/min x {} min). Please contact administrator to add quota.",
            s.rate, s.runtime_minutes
        );
        return Ok(Err(BudgetRefusal::Refused(Refused {
            message,
            balance,
            held: held.ceil(),
            estimated_cost: cost,
        })));
    }
    if let Some(limit) = s.budget.def.member_limit {
        let spent = read.member_spent.unwrap_or_default();
        let reserved = match s.member_held {
            Some(h) => h,
            None => store.budget_held(name, Some(s.username))?,
        };
        let total = i128::from(spent) * 1000 + i128::from(reserved) + i128::from(cost.raw());
        if total > i128::from(limit) * 1000 {
            let reserved = Milli(reserved);
            let reserved_text = if reserved.raw() > 0 {
                format!(" ({reserved} reserved)")
            } else {
                String::new()
            };
            let message = format!(
                "Cannot start container: monthly limit of budget {name} reached. Spent this month: {spent}{reserved_text}, limit: {limit}, estimated cost: {cost}."
            );
            return Ok(Err(BudgetRefusal::Refused(Refused {
                message,
                balance,
                held: Milli(held).ceil(),
                estimated_cost: cost,
            })));
        }
    }
    Ok(Ok(balance))
}
