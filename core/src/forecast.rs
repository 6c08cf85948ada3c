//! What a user's balance will do: when the next refresh rule changes it (and to what), and how
//! many minutes of each resource it buys now. Both come from the code the refresh and the gate run.

use std::collections::BTreeSet;

use indexmap::IndexMap;
use serde::Serialize;

use crate::accelerators::CPU_RESOURCE;
use crate::config::Config;
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
        if new == user.balance || new.abs() > limits::BALANCE_ABS_MAX {
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

/// The first scheduled rule run after `now` whose balance would let a start that needs `needed`
/// thousandths through, with `held` thousandths reserved by running servers: the rules' runs
/// are followed in time order (ties by rule name), each applied to the balance the ones before it
/// left, as the refresh would (targets, caps, floors), up to [`limits::forecast_runs_max`] runs
/// within [`limits::forecast_days_max`] days. None when no run within them gets there (no rule
/// targets the user, or none adds enough soon enough).
pub fn next_start_refresh(
    config: &Config,
    user: &UserRecord,
    groups: &BTreeSet<String>,
    held: i64,
    needed: i64,
    now: Timestamp,
) -> Option<NextRefresh> {
    let rules: Vec<_> = config.refresh_rules.values().filter(|r| r.enabled).collect();
    let mut next: Vec<Option<Timestamp>> = rules.iter().map(|r| r.schedule.next_after(now)).collect();
    let mut sim = user.clone();
    for _ in 0..limits::FORECAST_RUNS_MAX {
        // The earliest pending run (the rules are in name order, so a tie goes to the first name).
        let (i, at) = next
            .iter()
            .enumerate()
            .filter_map(|(i, t)| t.map(|t| (i, t)))
            .min_by_key(|&(i, t)| (t, i))?;
        if at.seconds() - now.seconds() > limits::FORECAST_DAYS_MAX * 86_400 {
            return None;
        }
        let rule = rules[i];
        next[i] = rule.schedule.next_after(at);
        if !rule.params.targets.matches(&sim, groups) {
            continue;
        }
        let Ok(new) = i64::try_from(rule.params.new_balance(sim.balance)) else {
            continue;
        };
        if new == sim.balance || new.abs() > limits::BALANCE_ABS_MAX {
            continue;
        }
        sim.balance = new;
        if (crate::account::Paying { balance: new, held }).available() >= i128::from(needed) {
            return Some(NextRefresh {
                rule: rule.name.clone(),
                at,
                balance: new,
            });
        }
    }
    None
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
    let paying = crate::account::Paying {
        balance: user.map_or(0, |u| u.balance),
        held: crate::account::held_personal(active),
    };
    let free = paying.available().max(0);
    let resources = std::iter::once(CPU_RESOURCE)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn config(rules: &str) -> Config {
        let doc = format!(r#"{{"custom": {{"authMode": "github", "quota": {{"refreshRules": {rules}}}}}}}"#);
        Config::from_values(&serde_json::from_str(&doc).expect("json")).expect("config")
    }

    fn user(balance: i64) -> UserRecord {
        UserRecord {
            username: "ann".into(),
            balance,
            unlimited: false,
            updated_at: Timestamp(0),
        }
    }

    fn at(s: &str) -> Timestamp {
        Timestamp::parse(s).expect("time")
    }

    #[test]
    fn a_start_looks_for_the_first_run_that_is_enough_within_a_year() {
        let c = config(
            r#"{"leap": {"enabled": true, "schedule": "0 0 29 2 *", "action": "add", "amount": 100},
                "daily": {"enabled": true, "schedule": "0 3 * * *", "action": "add", "amount": 5, "maxBalance": 20}}"#,
        );
        let none = BTreeSet::new();
        // 29 February 2028 is 464 days after this: too far for the forecast.
        assert_eq!(
            next_start_refresh(&c, &user(0), &none, 0, 50_000, at("2026-11-22T10:00:00Z")),
            None
        );
        // 273 days before it: found, after the daily runs stopped at their cap.
        let n =
            next_start_refresh(&c, &user(0), &none, 0, 50_000, at("2027-06-01T10:00:00Z")).expect("found");
        assert_eq!(
            (n.rule.as_str(), n.at, n.balance),
            ("leap", at("2028-02-29T00:00:00Z"), 120)
        );
        // The second daily run is the first that leaves 10 free...
        let n =
            next_start_refresh(&c, &user(0), &none, 0, 10_000, at("2027-06-01T10:00:00Z")).expect("found");
        assert_eq!(
            (n.rule.as_str(), n.at, n.balance),
            ("daily", at("2027-06-03T03:00:00Z"), 10)
        );
        // ... but running servers holding 15 keep it below that until the leap day.
        let n = next_start_refresh(&c, &user(0), &none, 15_000, 10_000, at("2027-06-01T10:00:00Z"))
            .expect("found");
        assert_eq!((n.rule.as_str(), n.balance), ("leap", 120));
    }
}
