//! What a user sees of their own quota (`GET {base}/api/quota/me`): the account as of now from
//! one read (`account::AccountView`), what it buys, its grants, its budgets, the next top-up.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::Value;

use crate::account::AccountView;
use crate::config::Config;
use crate::error::QuotaError;
use crate::milli::Milli;
use crate::names::normalize_username;
use crate::store::{AccountKey, Grant, Store};
use crate::time::Timestamp;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Me {
    pub username: String,
    pub balance: i64,
    /// What the user's running servers hold of the balance until they end (their estimated costs;
    /// servers charging a budget hold the budget's).
    pub held: Milli,
    /// What the user can spend now: the balance less what is held (null: nothing limits the user,
    /// unlimited or quota disabled). May be below zero after a debt.
    pub available: Option<Milli>,
    pub unlimited: bool,
    pub rates: Value,
    /// Each resource's display name ("cpu": "CPU"), the words the pages use for `rates`' keys.
    pub resource_names: indexmap::IndexMap<String, String>,
    pub enabled: bool,
    /// The next run of a refresh rule that would change this balance (null: none would).
    pub next_refresh: Option<crate::forecast::NextRefresh>,
    /// Minutes the free balance buys, per resource the user may start (null: unlimited).
    pub lasts_minutes: Option<indexmap::IndexMap<String, Option<i64>>>,
    /// Live dated grants with credit left, soonest expiry first.
    pub grants: Vec<Grant>,
    /// The soonest of them (null: none).
    pub expiring_next: Option<crate::lots::ExpiringNext>,
    /// The budgets the user may charge, by name.
    pub budgets: Vec<crate::budgets::MyBudget>,
}

/// What a user sees of their own quota, as of `now`; with `forecast`, the next refresh too.
pub fn me(
    config: &Config,
    store: &mut dyn Store,
    username: &str,
    now: Timestamp,
    forecast: bool,
) -> Result<Me, QuotaError> {
    let username = normalize_username("username", username)?;
    // One read of the account: its record, its running sessions, its grants.
    let crate::store::GateState { user, active, .. } = store.gate_state(&username, false)?;
    let all_grants = store.account_grants(&AccountKey::User(username.clone()))?;
    let view = AccountView::of(user, &all_grants, &active, now);
    let uses_groups = config
        .refresh_rules
        .values()
        .any(|r| r.enabled && r.params.targets.uses_groups())
        || !config.groups.restricted.is_empty();
    let any_budget = !config.budgets.is_empty() || !store.scan_budgets(None, 1)?.is_empty();
    let groups = if uses_groups || any_budget {
        crate::groups::of(store, &username)?
    } else {
        BTreeSet::new()
    };
    let grants = crate::lots::live(all_grants, now);
    let budgets = if any_budget {
        crate::budgets::mine(config, store, &username, &groups, now)?
    } else {
        Vec::new()
    };
    let (balance, held) = (view.balance(), view.held);
    let unlimited = view.unlimited() || !config.enabled;
    let free = view.paying().available();
    let user = view.record;
    Ok(Me {
        held: Milli(held),
        available: (!unlimited)
            .then(|| Milli(i64::try_from(free).unwrap_or(if free < 0 { i64::MIN } else { i64::MAX }))),
        expiring_next: crate::lots::expiring_next(&grants),
        grants,
        budgets,
        next_refresh: forecast
            .then(|| crate::forecast::next_refresh(config, user.as_ref(), &groups, now))
            .flatten(),
        lasts_minutes: crate::forecast::lasts_minutes(config, user.as_ref(), &active, &groups),
        balance,
        // With quota disabled nothing limits the user: `unlimited` says so, whatever is stored (the
        // original answered this way, and its spawn page refuses to launch on a negative balance).
        unlimited,
        username,
        rates: config.rates_json(),
        resource_names: config.resource_names(),
        enabled: config.enabled,
    })
}
