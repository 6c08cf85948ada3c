//! The gate with a budget (credit model 2, "The gate with a budget"): checks 2 to 5 in their
//! order, each with its exact text. Check 1 (an unknown budget, a 400) is the gate's validation.
//! Every refusal records nothing; the budget's reservation and its checks are one step of the
//! caller's transaction (the store serializes writers), so concurrent starts never overspend.

use crate::groups::GroupSet;

use super::account::{balance_of, month_start, Budget};
use crate::account::{afford, within_member_limit, Payer, Paying, Price, Shortfall};
use crate::config::Config;
use crate::error::QuotaError;
use crate::store::Store;
use crate::time::Timestamp;

/// What a start charging a budget asks.
pub struct BudgetStart<'a> {
    pub budget: &'a Budget,
    pub username: &'a str,
    pub groups: &'a dyn GroupSet,
    pub resource: &'a str,
    pub price: Price,
    /// What the member's running sessions on the budget hold (thousandths), when the caller has
    /// read them (the gate: its user's active sessions); `None`: read from the store.
    pub member_held: Option<i64>,
    /// Locks the budget's row for the check (a start or an extension, in a write transaction);
    /// `false` for a read-only quote (`/me/status`), which PostgreSQL refuses to lock.
    pub lock: bool,
}

/// How a start charging a budget is refused: forbidden (not a member, a resource it does not pay
/// for: the 403 text alone) or refused for credit or a member's limit (the budget's figures).
pub enum BudgetRefusal {
    Forbidden(String),
    Refused(Shortfall),
}

/// Checks 2 to 5 of a start charging a budget: the budget's balance as of now when it may start
/// (the caller records the session, whose estimated cost is then the budget's reservation), else
/// why not. Membership and what it pays for are decided from the definition; then one read (the
/// budget's row locked first, so that its reservations and this check are one serialized step)
/// and the decision on the budget as a paying account.
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
    // One read: the row, the running totals of what its sessions hold, and the member's month
    // when a limit asks for it (each a row or a month of days, whatever the number running).
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
    let paying = Paying {
        balance,
        held: read.held,
    };
    crate::invariants::held(paying.held);
    if let Err(short) = afford(Payer::Budget(name), paying, s.price, config.minimum_to_start) {
        return Ok(Err(BudgetRefusal::Refused(short)));
    }
    if let Some(limit) = s.budget.def.member_limit {
        let reserved = match s.member_held {
            Some(h) => h,
            None => store.budget_held(name, Some(s.username))?,
        };
        let spent = read.member_spent.unwrap_or_default();
        if let Err(short) = within_member_limit(name, limit, spent, reserved, s.price, paying) {
            return Ok(Err(BudgetRefusal::Refused(short)));
        }
    }
    Ok(Ok(balance))
}
