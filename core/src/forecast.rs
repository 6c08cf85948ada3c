//! What a user's balance will do: when the next refresh rule changes it (and to what), and how
//! many minutes of each resource it buys now. Both come from the code the refresh and the gate run.

use std::collections::BTreeSet;

use indexmap::IndexMap;
use serde::Serialize;

use crate::config::{cpu_resource, Config};
use crate::limits;
use crate::store::{Session, UserRecord};
use crate::time::Timestamp;

/// The next run of an enabled rule that would change the user's balance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NextRefresh {
    pub rule: String,
    pub at: Timestamp,
    /// The balance that run would give, as the refresh computes it (targets, caps, floors).
    pub balance: i64,
}

/// The earliest next firing, strictly after `now`, of an enabled rule whose targets match `user`
/// (a member of `groups`) and whose action changes their balance; ties by rule name. A user
/// without a record is never refreshed (the refresh visits records only): none.
pub fn next_refresh(
    config: &Config,
    user: Option<&UserRecord>,
    groups: &BTreeSet<String>,
    now: Timestamp,
) -> Option<NextRefresh> {
    let user = user?;
    let mut best: Option<NextRefresh> = None;
    for rule in config.refresh_rules.values().filter(|r| r.enabled) {
        if !rule.params.targets.matches(user, groups) {
            continue;
        }
        // Out of range: the run would be refused for everyone, so it changes nothing.
        let Ok(new) = i64::try_from(rule.params.new_balance(user.balance)) else {
            continue;
        };
        if new == user.balance || new.abs() > limits::balance_abs_max {
            continue;
        }
        let Some(at) = rule.schedule.next_after(now) else {
            continue;
        };
        if best.as_ref().is_none_or(|b| at < b.at) {
            best = Some(NextRefresh {
                rule: rule.name.clone(),
                at,
                balance: new,
            });
        }
    }
    best
}

/// Minutes the free balance (the balance less what running servers hold) buys of each resource the
/// user may start, CPU first then the accelerators in the values file's order; a free rate buys
/// without end (null). None when nothing limits the user (unlimited, or quota disabled).
pub fn lasts_minutes(
    config: &Config,
    user: Option<&UserRecord>,
    active: &[Session],
    groups: &BTreeSet<String>,
) -> Option<IndexMap<String, Option<i64>>> {
    if !config.enabled || user.is_some_and(|u| u.unlimited) {
        return None;
    }
    let balance = user.map_or(0, |u| u.balance);
    let held: i128 = active
        .iter()
        .filter(|s| s.billable)
        .map(|s| i128::from(s.estimated_cost.raw()))
        .sum();
    let free = (i128::from(balance) * 1000 - held).max(0);
    let resources = std::iter::once(cpu_resource)
        .chain(config.accelerators.keys().map(String::as_str))
        .filter(|r| config.groups.may_start(r, groups));
    Some(
        resources
            .map(|r| {
                let rate = config.rate_of(r).map_or(0, |m| i128::from(m.raw()));
                let minutes = (rate > 0).then(|| i64::try_from(free / rate).unwrap_or(i64::MAX));
                (r.to_string(), minutes)
            })
            .collect(),
    )
}
