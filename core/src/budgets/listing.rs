//! What the budget routes and `/api/quota/me` show of budgets: the list, one budget's detail
//! (grants, members with their month, newest transactions) and a user's own budgets.

use std::collections::BTreeSet;

use serde::Serialize;

use super::account::{all, balance_and_held, known, member_month, members, month_start, Budget};
use crate::config::Config;
use crate::error::QuotaError;
use crate::limits;
use crate::lots::{self, ExpiringNext};
use crate::milli::Milli;
use crate::store::{AccountKey, Grant, Store, Transaction};
use crate::time::Timestamp;

/// A budget as the list shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BudgetSummary {
    pub name: String,
    pub description: String,
    /// As of now.
    pub balance: i64,
    /// What its running sessions hold.
    pub reserved: Milli,
    pub member_limit: Option<i64>,
    /// The resource types it pays for; null: all.
    pub accelerators: Option<BTreeSet<String>>,
    /// How many members.
    pub members: usize,
    /// `values` or `api`.
    pub source: &'static str,
}

fn summary(
    store: &mut dyn Store,
    b: &Budget,
    now: Timestamp,
) -> Result<(BudgetSummary, BTreeSet<String>), QuotaError> {
    let (balance, held) = balance_and_held(store, &b.name, now)?;
    let who = members(store, &b.def)?;
    Ok((
        BudgetSummary {
            name: b.name.clone(),
            description: b.def.description.clone(),
            balance,
            reserved: Milli(held),
            member_limit: b.def.member_limit,
            accelerators: b.def.accelerators.clone(),
            members: who.len(),
            source: b.source.as_str(),
        },
        who,
    ))
}

/// `GET .../budgets`: the budgets with a name after `after` (every one when `None`), by name, at
/// most `limit`, only those shared by one of `groups` when given (course staff); and the name to ask
/// after for the next page (`None`: none left).
pub fn list(
    config: &Config,
    store: &mut dyn Store,
    now: Timestamp,
    after: Option<&str>,
    limit: usize,
    groups: Option<&BTreeSet<String>>,
) -> Result<(Vec<BudgetSummary>, Option<String>), QuotaError> {
    let listed: Vec<Budget> = all(config, store)?
        .into_iter()
        .map(|(b, _)| b)
        .filter(|b| after.is_none_or(|a| b.name.as_str() > a))
        .filter(|b| groups.is_none_or(|g| b.def.groups.iter().any(|x| g.contains(x))))
        .collect();
    let more = listed.len() > limit;
    let mut out = Vec::new();
    for b in listed.iter().take(limit) {
        out.push(summary(store, b, now)?.0);
    }
    let next = if more {
        out.last().map(|s| s.name.clone())
    } else {
        None
    };
    Ok((out, next))
}

/// A member's month on a budget.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MemberMonth {
    pub username: String,
    pub spent_this_month: i64,
    pub reserved: Milli,
}

/// `GET .../budgets/<name>`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BudgetDetail {
    #[serde(flatten)]
    pub summary: BudgetSummary,
    pub users: BTreeSet<String>,
    pub groups: BTreeSet<String>,
    /// Live grants with credit left, soonest expiry first.
    pub grants: Vec<Grant>,
    #[serde(rename = "members")]
    pub member_months: Vec<MemberMonth>,
    pub recent_transactions: Vec<Transaction>,
}

/// `GET .../budgets/<name>`: the summary, its grants, every member's month (members and anyone
/// who charged it this month), its newest 20 transactions. Unknown: 404.
pub fn detail(
    config: &Config,
    store: &mut dyn Store,
    name: &str,
    now: Timestamp,
) -> Result<BudgetDetail, QuotaError> {
    let b = known(config, store, name)?;
    let (summary, who) = summary(store, &b, now)?;
    let grants = lots::live(store.account_grants(&AccountKey::Budget(b.name.clone()))?, now);
    let mut spent: std::collections::BTreeMap<String, (i64, i64)> =
        who.into_iter().map(|u| (u, (0, 0))).collect();
    for (u, c) in store.budget_spent(&b.name, month_start(now), None)? {
        spent.entry(u).or_default().0 = c;
    }
    for s in store.budget_sessions(&b.name)? {
        if s.billable {
            spent.entry(s.username.clone()).or_default().1 += s.estimated_cost.raw();
        }
    }
    let member_months = spent
        .into_iter()
        .map(|(username, (spent_this_month, reserved))| MemberMonth {
            username,
            spent_this_month,
            reserved: Milli(reserved),
        })
        .collect();
    let recent_transactions = store.recent_budget_transactions(&b.name, limits::RECENT_TRANSACTIONS_MAX)?;
    Ok(BudgetDetail {
        summary,
        users: b.def.users.clone(),
        groups: b.def.groups.clone(),
        grants,
        member_months,
        recent_transactions,
    })
}

/// One of a user's budgets, as `/api/quota/me` shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MyBudget {
    pub name: String,
    pub description: String,
    pub balance: i64,
    /// What the user could start against now: the balance less its reservations, capped by what
    /// is left of the user's monthly limit.
    pub available: Milli,
    /// What the budget's running servers (everyone's) hold of its balance.
    pub held: Milli,
    pub member_limit: Option<i64>,
    pub spent_this_month: i64,
    pub expiring_next: Option<ExpiringNext>,
}

/// The budgets `username` (in `groups`) may charge, by name.
pub fn mine(
    config: &Config,
    store: &mut dyn Store,
    username: &str,
    groups: &BTreeSet<String>,
    now: Timestamp,
) -> Result<Vec<MyBudget>, QuotaError> {
    let mut out = Vec::new();
    for (b, _) in all(config, store)? {
        if !b.def.is_member(username, groups) {
            continue;
        }
        let (balance, held) = balance_and_held(store, &b.name, now)?;
        let (spent, reserved) = member_month(store, &b.name, username, now)?;
        let mut available = crate::account::Paying { balance, held }.available();
        if let Some(limit) = b.def.member_limit {
            available = available.min(crate::account::member_room(limit, spent, reserved));
        }
        let live = lots::live(store.account_grants(&AccountKey::Budget(b.name.clone()))?, now);
        out.push(MyBudget {
            description: b.def.description.clone(),
            balance,
            available: Milli(i64::try_from(available.max(0)).unwrap_or(i64::MAX)),
            held: Milli(held),
            member_limit: b.def.member_limit,
            spent_this_month: spent,
            expiring_next: lots::expiring_next(&live),
            name: b.name,
        });
    }
    Ok(out)
}
