//! Which budgets exist (the values file's, then those made over REST), their members, their
//! accounts, balances and reservations, and a member's month.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::definition::{stored, BudgetDefinition, Source};
use crate::config::Config;
use crate::error::QuotaError;
use crate::ledger::BudgetAccount;
use crate::limits;
use crate::lots;
use crate::store::{AccountKey, BudgetRow, Store};
use crate::time::Timestamp;

/// A budget that exists: its name, definition and where the definition comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Budget {
    pub name: String,
    /// Shared with the configuration (a values file's budget may list thousands of users: a start
    /// charging it must not copy them).
    pub def: Arc<BudgetDefinition>,
    pub source: Source,
}

/// The budget named `name`: the values file's, else one defined over REST; `None`: unknown.
pub fn find(config: &Config, store: &mut dyn Store, name: &str) -> Result<Option<Budget>, QuotaError> {
    if let Some(def) = config.budgets.get(name) {
        return Ok(Some(Budget {
            name: name.to_string(),
            def: def.clone(),
            source: Source::Values,
        }));
    }
    Ok(store.get_budget(name)?.and_then(|row| {
        row.definition.map(|d| Budget {
            name: name.to_string(),
            def: Arc::new(stored(&d)),
            source: Source::Api,
        })
    }))
}

/// The names of the budgets whose `groups` include `group` (course staff's allowance counts what
/// they added to these).
pub fn sharing(config: &Config, store: &mut dyn Store, group: &str) -> Result<Vec<String>, QuotaError> {
    Ok(all(config, store)?
        .into_iter()
        .filter(|(b, _)| b.def.groups.iter().any(|g| g == group))
        .map(|(b, _)| b.name)
        .collect())
}

/// The budget named `name`, or the 404 every budget route answers for an unknown one.
pub fn known(config: &Config, store: &mut dyn Store, name: &str) -> Result<Budget, QuotaError> {
    find(config, store, name)?.ok_or_else(|| QuotaError::NotFound(format!("Budget {name} not found")))
}

/// Every budget, by name, with its stored row (`None`: no balance change yet).
pub fn all(config: &Config, store: &mut dyn Store) -> Result<Vec<(Budget, Option<BudgetRow>)>, QuotaError> {
    let mut rows: std::collections::BTreeMap<String, BudgetRow> = std::collections::BTreeMap::new();
    // A page at a time: at most `budgets_max` are defined, but rows of values-file budgets a
    // later values file dropped stay too.
    loop {
        let after = rows.keys().next_back().cloned();
        let page = store.scan_budgets(after.as_deref(), limits::SCAN_PAGE_BUDGETS)?;
        let full = page.len() == limits::SCAN_PAGE_BUDGETS;
        rows.extend(page.into_iter().map(|r| (r.name.clone(), r)));
        if !full {
            break;
        }
    }
    let mut out = Vec::new();
    for (name, def) in &config.budgets {
        let row = rows.remove(name);
        out.push((
            Budget {
                name: name.clone(),
                def: def.clone(),
                source: Source::Values,
            },
            row,
        ));
    }
    for (name, row) in rows {
        if let Some(d) = &row.definition {
            out.push((
                Budget {
                    name: name.clone(),
                    def: Arc::new(stored(d)),
                    source: Source::Api,
                },
                Some(row),
            ));
        }
    }
    out.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    Ok(out)
}

/// The members of a budget: its listed users and every member of its listed groups, by name.
pub fn members(store: &mut dyn Store, def: &BudgetDefinition) -> Result<BTreeSet<String>, QuotaError> {
    let mut out = def.users.clone();
    for g in &def.groups {
        let mut after = String::new();
        loop {
            let page = store.scan_group(g, &after, crate::limits::USERS_PAGE_MAX)?;
            let Some(last) = page.last().cloned() else { break };
            out.extend(page);
            after = last;
        }
    }
    Ok(out)
}

/// A budget's account as stored (balance 0 before its first change) for a write by `member`.
pub fn account(
    store: &mut dyn Store,
    name: &str,
    member: &str,
    now: Timestamp,
) -> Result<BudgetAccount, QuotaError> {
    let row = store.get_budget(name)?.unwrap_or_else(|| BudgetRow {
        name: name.to_string(),
        balance: 0,
        updated_at: now,
        definition: None,
    });
    Ok(BudgetAccount {
        row,
        member: member.to_string(),
    })
}

/// A budget's balance as of now, and what its running sessions hold (thousandths).
pub fn balance_and_held(store: &mut dyn Store, name: &str, now: Timestamp) -> Result<(i64, i64), QuotaError> {
    let row = store.get_budget(name)?;
    let balance = balance_of(store, row.as_ref(), name, now)?;
    let held = store.budget_held(name, None)?;
    crate::invariants::held(held);
    Ok((balance, held))
}

/// A budget's balance as of now from its row (read already: the gate's, locked) and its grants.
pub fn balance_of(
    store: &mut dyn Store,
    row: Option<&BudgetRow>,
    name: &str,
    now: Timestamp,
) -> Result<i64, QuotaError> {
    let stored = row.map_or(0, |r| r.balance);
    let grants = store.account_grants(&AccountKey::Budget(name.to_string()))?;
    Ok(lots::balance_at(stored, &grants, now))
}

/// The first instant of `now`'s UTC calendar month: where a member's monthly spending starts.
pub fn month_start(now: Timestamp) -> Timestamp {
    use chrono::Datelike;
    let d = now.to_naive().date();
    let first = d.with_day(1).unwrap_or(d);
    Timestamp::from_naive(first.and_hms_opt(0, 0, 0).unwrap_or_default())
}

/// What `username` charged budget `name` this UTC month, and what their running sessions on it
/// hold (thousandths): two reads of running totals, whatever the number of sessions running.
pub fn member_month(
    store: &mut dyn Store,
    name: &str,
    username: &str,
    now: Timestamp,
) -> Result<(i64, i64), QuotaError> {
    // The month starts at a day's start: the member's sums by day from that day on.
    let spent = store.member_spent_since(name, username, crate::usage::day_of(month_start(now)))?;
    let reserved = store.budget_held(name, Some(username))?;
    Ok((spent, reserved))
}
