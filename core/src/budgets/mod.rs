//! Shared budgets (credit model 2, "Shared budgets"): accounts several users may charge. Which
//! budgets exist and their accounts are `account.rs`; here their balance actions, definitions over
//! REST and deletion. The gate's checks are `check.rs`, what the routes list and show
//! `listing.rs`, a definition's reading `definition.rs`.

mod account;
mod check;
pub mod definition;
mod listing;

use serde::Serialize;

pub use account::{
    account, all, balance_and_held, find, known, member_month, members, month_start, sharing, Budget,
};
pub use check::{check_start, BudgetRefusal, BudgetStart};
pub use definition::*;
pub use listing::{detail, list, mine, BudgetDetail, BudgetSummary, MyBudget};

use crate::admin::{self, AdminAction};
use crate::config::Config;
use crate::engine_call::EngineCall;
use crate::error::QuotaError;
use crate::store::{AccountKey, BudgetRow, Store};
use crate::time::Timestamp;

/// `{budget, balance, action, amount}`: a budget's balance action done.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BudgetChanged {
    pub budget: String,
    pub balance: i64,
    pub action: &'static str,
    pub amount: i64,
}

/// `POST .../budgets/<name>`: `set`, `add` (dated with `expires_at`) or `deduct`, as for a user,
/// in the spending order; `set_unlimited` is a 400 (a budget is never unlimited).
pub fn change(
    config: &Config,
    tx: &mut EngineCall<'_>,
    name: &str,
    req: (AdminAction, Option<String>, Option<Timestamp>),
    caller: &str,
    now: Timestamp,
) -> Result<BudgetChanged, QuotaError> {
    let (action, description, expires_at) = req;
    if let AdminAction::SetUnlimited(_) = action {
        return Err(QuotaError::invalid(
            "action",
            "a budget is never unlimited: use `set`, `add` or `deduct`",
        ));
    }
    let budget = known(config, tx.store(), name)?;
    let mut acct = account(tx.store(), &budget.name, "", now)?;
    let done = admin::apply_checked(tx, &mut acct, action, description, expires_at, caller, now)?;
    Ok(BudgetChanged {
        budget: budget.name,
        balance: done,
        action: action.name(),
        amount: match action {
            AdminAction::Set(a) | AdminAction::Add(a) | AdminAction::Deduct(a) => a,
            AdminAction::SetUnlimited(_) => 0,
        },
    })
}

/// `PUT .../budgets/<name>`: defines (or replaces the whole definition of) a budget made over
/// REST. A budget the values file defines is read-only here (409).
pub fn define(
    config: &Config,
    store: &mut dyn Store,
    name: &str,
    def: &BudgetDefinition,
    now: Timestamp,
) -> Result<serde_json::Value, QuotaError> {
    validate_name("name", name)?;
    if config.budgets.contains_key(name) {
        return Err(read_only(name));
    }
    let mut row = store.get_budget(name)?.unwrap_or_else(|| BudgetRow {
        name: name.to_string(),
        balance: 0,
        updated_at: now,
        definition: None,
    });
    let created = row.definition.is_none();
    if created && all(config, store)?.len() >= crate::limits::BUDGETS_MAX {
        return Err(QuotaError::Conflict(format!(
            "at most {} budgets may be defined: delete one before defining {name}",
            crate::limits::BUDGETS_MAX
        )));
    }
    row.definition = Some(to_json(def));
    store.put_budget(&row)?;
    Ok(serde_json::json!({"budget": name, "created": created}))
}

/// `DELETE .../budgets/<name>`: only a REST budget with balance 0 that no running session
/// charges (409 otherwise); its transactions stay in the ledger.
pub fn delete(
    config: &Config,
    tx: &mut EngineCall<'_>,
    name: &str,
    now: Timestamp,
) -> Result<serde_json::Value, QuotaError> {
    let budget = known(config, tx.store(), name)?;
    if budget.source == Source::Values {
        return Err(read_only(name));
    }
    let (balance, _) = balance_and_held(tx.store(), name, now)?;
    if balance != 0 {
        return Err(QuotaError::Conflict(format!(
            "Budget {name} still holds a balance of {balance}: set it to 0 before deleting it"
        )));
    }
    let running = tx.budget_sessions(name)?.len();
    if running > 0 {
        return Err(QuotaError::Conflict(format!(
            "Budget {name} is charged by {running} running session(s): delete it after they end"
        )));
    }
    // Due expiries are written first, so the ledger of a deleted budget still sums to 0.
    let grants = tx.account_grants(&AccountKey::Budget(name.to_string()))?;
    let mut acct = account(tx.store(), name, "", now)?;
    crate::grants::settle_with(tx, &mut acct, grants, now)?;
    tx.delete_budget(name)?;
    Ok(serde_json::json!({"budget": name, "deleted": true}))
}

fn read_only(name: &str) -> QuotaError {
    QuotaError::Conflict(format!(
        "Budget {name} is defined in the values file (custom.quota.budgets.{name}): change it there"
    ))
}
