//! Randomized: the forecast in `GET /api/quota/me` (`next_refresh`) is what the refresh does. For
//! random users (balances, unlimited flags, groups) and random rules (schedules, add or set, caps,
//! floors, targets with groups), the rules are then run as the scheduler would, each at its fire
//! times in order, up to the forecast's time: no run before it changes the user, and the forecast
//! rule's run gives exactly the forecast balance. `QUOTA_FORECAST_SEED=<seed>` replays one seed.

mod rng;
use rng::Rng;

use std::collections::BTreeSet;

use quota_core::engine_call::EngineCall;
use quota_core::forecast::next_refresh;
use quota_core::groups;
use quota_core::refresh::refresh;
use quota_core::store::UserRecord;
use quota_core::store::UserStore;
use quota_core::{Config, MemStore, Timestamp};
use serde_json::json;

const RUNS: u64 = 300;
const USERS: [&str; 4] = ["ann", "bob", "cy", "dee"];
const SCHEDULES: [&str; 5] = [
    "0 6 * * 1",
    "0 12 * * *",
    "30 * * * *",
    "0 0 1 * *",
    "15 9 * * 2,4",
];

fn random_rule(rng: &mut Rng) -> serde_json::Value {
    let set = rng.chance(30);
    let mut r = json!({
        "enabled": rng.chance(85),
        "schedule": rng.pick(&SCHEDULES),
        "action": if set { "set" } else { "add" },
        "amount": if set { *rng.pick(&[0i64, 20, 100]) } else { *rng.pick(&[-30i64, -5, 10, 50]) },
    });
    if rng.chance(40) {
        r["maxBalance"] = json!(rng.pick(&[30i64, 60, 200]));
    }
    if rng.chance(30) {
        r["minBalance"] = json!(rng.pick(&[0i64, 10]));
    }
    let mut t = serde_json::Map::new();
    if rng.chance(30) {
        t.insert("balanceBelow".into(), json!(rng.pick(&[20i64, 50, 100])));
    }
    if rng.chance(20) {
        t.insert("includeUnlimited".into(), json!(true));
    }
    if rng.chance(35) {
        t.insert("includeGroups".into(), json!([rng.pick(&["g1", "g2"])]));
    }
    if rng.chance(20) {
        t.insert("excludeGroups".into(), json!([rng.pick(&["g1", "g2"])]));
    }
    r["targets"] = serde_json::Value::Object(t);
    r
}

fn run(seed: u64) -> Result<(), String> {
    let mut rng = Rng(seed);
    let rules: serde_json::Map<String, serde_json::Value> = (0..1 + rng.below(4))
        .map(|i| (format!("r{i}"), random_rule(&mut rng)))
        .collect();
    let config = Config::from_values(&json!({"custom": {"authMode": "github",
        "quota": {"refreshRules": rules}}}))
    .map_err(|e| format!("config: {e}"))?;
    let mut store = MemStore::new();
    let now = Timestamp(1_795_000_000 + rng.below(86_400 * 14) as i64);
    for u in USERS {
        if rng.chance(85) {
            let rec = UserRecord {
                username: u.into(),
                balance: *rng.pick(&[-10i64, 0, 15, 45, 80, 300]),
                unlimited: rng.chance(15),
                updated_at: now,
            };
            store.put_user(&rec).unwrap();
        }
        let g: BTreeSet<String> = ["g1", "g2"]
            .iter()
            .filter(|_| rng.chance(40))
            .map(|s| s.to_string())
            .collect();
        groups::report(&mut store, u, &g, now).unwrap();
    }
    let user = *rng.pick(&USERS);
    let record = store.get_user(user).unwrap();
    let mine = groups::of(&mut store, user).unwrap();
    let forecast = next_refresh(&config, record.as_ref(), &mine, now);

    // Every enabled rule's fire times after `now`, in order, up to the forecast's time (or a week).
    let horizon = forecast.as_ref().map_or(now.plus_seconds(7 * 86_400), |f| f.at);
    let mut fires: Vec<(Timestamp, String)> = Vec::new();
    for (name, r) in config.refresh_rules.iter().filter(|(_, r)| r.enabled) {
        let mut t = now;
        while let Some(next) = r.schedule.next_after(t) {
            if next > horizon {
                break;
            }
            fires.push((next, name.clone()));
            t = next;
        }
    }
    fires.sort();
    let before = record.as_ref().map(|u| u.balance);
    if let Some(f) = &forecast {
        if Some(f.balance) == before {
            return Err(format!("forecast {f:?} changes nothing (rules {rules:?})"));
        }
    }
    for (i, (at, name)) in fires.iter().enumerate() {
        let req = config.rule_request(name, None, false).unwrap();
        // A run refused for someone (out of range) changes no one: as the scheduler sees it.
        let _ = refresh(
            &quota_core::Config::default(),
            &mut EngineCall::new(&mut store),
            &req,
            *at,
        );
        let after = store.get_user(user).unwrap().map(|u| u.balance);
        let is_forecast = forecast.as_ref().is_some_and(|f| f.at == *at && f.rule == *name);
        let last_at_that_time = fires.get(i + 1).is_none_or(|(t, _)| t != at);
        match &forecast {
            Some(f) if is_forecast => {
                if after != Some(f.balance) {
                    return Err(format!(
                        "forecast {f:?} but the run gave {after:?} (rules {rules:?})"
                    ));
                }
                return Ok(());
            }
            _ if after != before && last_at_that_time => {
                return Err(format!(
                    "{name} at {at} changed {user} from {before:?} to {after:?} before the forecast {forecast:?} (rules {rules:?})"
                ));
            }
            _ => {}
        }
    }
    match forecast {
        Some(f) => Err(format!("the forecast run {f:?} never came (rules {rules:?})")),
        None => Ok(()),
    }
}

#[test]
fn the_forecast_is_what_the_refresh_does_at_that_time() {
    let seeds: Vec<u64> = match std::env::var("QUOTA_FORECAST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(s) => vec![s],
        None => (0..RUNS).map(|i| 0xF0_0000 + i).collect(),
    };
    for seed in seeds {
        if let Err(e) = run(seed) {
            panic!("seed {seed} (replay: QUOTA_FORECAST_SEED={seed} cargo test -p quota-core --test forecast): {e}");
        }
    }
}
