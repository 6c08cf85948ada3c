//! The reference world: every account's lots, the running sessions and each member's month; one
//! random step through the REST front door, and the comparison of every account with the engine.

use std::collections::BTreeMap;

use quota_core::api::{handle_request, Caller, Request};
use quota_core::{Config, MemStore, Timestamp};
use serde_json::{json, Value};

use crate::lots::{Lots, Order};
use crate::rng::Rng;
use crate::{MEMBERS, MEMBER_LIMIT, USERS};

thread_local! {
    /// Each session's server name (the model's sessions leave it out).
    pub static SERVERS: std::cell::RefCell<BTreeMap<i64, String>> = Default::default();
}

fn month_start(t: i64) -> i64 {
    use chrono::Datelike;
    let d = Timestamp(t).to_naive().date();
    Timestamp::from_naive(d.with_day(1).unwrap().and_hms_opt(0, 0, 0).unwrap()).seconds()
}

fn call(cfg: &Config, store: &mut MemStore, method: &str, path: &str, body: Value, now: i64) -> (u16, Value) {
    let caller = Caller {
        name: "admin".into(),
        admin: true,
        scopes: vec!["quota:sessions".into()],
    };
    let text = body.to_string();
    let r = handle_request(
        cfg,
        store,
        &Request {
            method,
            path,
            query: "",
            body: if body.is_null() { "" } else { &text },
            caller: Some(&caller),
        },
        Timestamp(now),
    )
    .expect("storage")
    .answer;
    (r.status, serde_json::from_str(&r.body).unwrap_or(Value::Null))
}

fn stamp(t: i64) -> String {
    format!("{}Z", Timestamp(t))
}

/// Path of an account's balance action, and of its read.
fn paths(account: &str) -> (String, String) {
    match account {
        "lab" => (
            "/admin/api/quota/budgets/lab".into(),
            "/admin/api/quota/budgets/lab".into(),
        ),
        u => (
            format!("/admin/api/quota/users/{u}"),
            format!("/admin/api/quota/users/{u}"),
        ),
    }
}

pub struct Session {
    user: String,
    budget: bool,
    start: i64,
    est: i64,
}

pub struct World {
    pub order: Order,
    pub accounts: BTreeMap<String, Lots>,
    pub next_grant: i64,
    pub sessions: BTreeMap<i64, Session>,
    /// (member, month start) -> credits charged to the budget.
    pub spent: BTreeMap<(String, i64), i64>,
}

impl World {
    fn lots(&mut self, account: &str) -> &mut Lots {
        self.accounts.entry(account.to_string()).or_default()
    }

    /// One random step; returns what it did, or the first difference from the engine.
    pub fn step(
        &mut self,
        rng: &mut Rng,
        cfg: &Config,
        store: &mut MemStore,
        now: i64,
    ) -> Result<String, String> {
        let account = *rng.pick(&["ann", "bob", "cat", "lab"]);
        let (action_path, _) = paths(account);
        match rng.below(100) {
            0..25 => {
                // A dated grant, expiring within the next hours (often before the next steps).
                let amount = 1 + rng.below(80) as i64;
                let at = now + 60 * (1 + rng.below(600) as i64);
                let (st, b) = call(
                    cfg,
                    store,
                    "POST",
                    &action_path,
                    json!({"action": "add", "amount": amount, "expires_at": stamp(at)}),
                    now,
                );
                if st != 200 {
                    return Err(format!("dated add to {account}: {st} {b}"));
                }
                self.next_grant += 1;
                let id = self.next_grant;
                let l = self.lots(account);
                l.settle(now);
                l.grants.insert(id, (amount, at));
                Ok(format!("{account} +{amount} until {}", stamp(at)))
            }
            25..35 => {
                let amount = rng.below(60) as i64 - 10;
                let (st, b) = call(
                    cfg,
                    store,
                    "POST",
                    &action_path,
                    json!({"action": "add", "amount": amount}),
                    now,
                );
                if st != 200 {
                    return Err(format!("add to {account}: {st} {b}"));
                }
                let order = self.order;
                let l = self.lots(account);
                l.settle(now);
                if amount >= 0 {
                    l.undated += amount;
                } else {
                    l.draw(-amount, now, order);
                }
                Ok(format!("{account} add {amount}"))
            }
            35..42 => {
                let amount = 1 + rng.below(50) as i64;
                let order = self.order;
                let enough = self.lots(account).balance(now) >= amount;
                let (st, b) = call(
                    cfg,
                    store,
                    "POST",
                    &action_path,
                    json!({"action": "deduct", "amount": amount}),
                    now,
                );
                match (enough, st) {
                    (true, 200) => {
                        let l = self.lots(account);
                        l.settle(now);
                        l.draw(amount, now, order);
                    }
                    (false, 400) => {}
                    _ => {
                        return Err(format!(
                            "deduct {amount} from {account} (enough: {enough}): {st} {b}"
                        ))
                    }
                }
                Ok(format!("{account} deduct {amount}"))
            }
            42..47 => {
                let amount = rng.below(100) as i64;
                let dated = rng.chance(50);
                let at = now + 60 * (1 + rng.below(300) as i64);
                let body = if dated {
                    json!({"action": "set", "amount": amount, "expires_at": stamp(at)})
                } else {
                    json!({"action": "set", "amount": amount})
                };
                let (st, b) = call(cfg, store, "POST", &action_path, body, now);
                if st != 200 {
                    return Err(format!("set {account}: {st} {b}"));
                }
                let mut l = Lots::default();
                if dated && amount > 0 {
                    self.next_grant += 1;
                    l.grants.insert(self.next_grant, (amount, at));
                } else {
                    l.undated = amount;
                }
                self.accounts.insert(account.to_string(), l);
                Ok(format!(
                    "{account} set {amount}{}",
                    if dated { " dated" } else { "" }
                ))
            }
            47..75 => self.start(rng, cfg, store, now),
            75..95 => self.end(rng, cfg, store, now),
            _ => {
                let (st, b) = call(cfg, store, "POST", "/admin/api/quota/expire", Value::Null, now);
                if st != 200 {
                    return Err(format!("sweep: {st} {b}"));
                }
                for l in self.accounts.values_mut() {
                    l.settle(now);
                }
                Ok("sweep".into())
            }
        }
    }

    fn start(
        &mut self,
        rng: &mut Rng,
        cfg: &Config,
        store: &mut MemStore,
        now: i64,
    ) -> Result<String, String> {
        let user = rng.pick(&USERS).to_string();
        let budget = rng.chance(60);
        let minutes = 1 + rng.below(60) as i64;
        let server = format!("s{}", rng.below(3));
        let mut body = json!({"username": user, "runtime_minutes": minutes, "server_name": server});
        if budget {
            body["budget"] = json!("lab");
        }
        // A running session of the same server is an orphan: the engine closes (and bills) it.
        let orphan = self
            .sessions
            .iter()
            .find(|(id, s)| s.user == user && SERVERS.with(|m| m.borrow().get(*id) == Some(&server)))
            .map(|(id, _)| *id);
        if let Some(id) = orphan {
            let s = self.sessions.remove(&id).expect("orphan");
            let elapsed_min = ((now - s.start).div_euclid(60)).max(1).min(s.est);
            self.charge(&s, elapsed_min, now);
        }
        let expect_allowed = if budget {
            let member = MEMBERS.contains(&user.as_str());
            let held: i64 = self.sessions.values().filter(|s| s.budget).map(|s| s.est).sum();
            let afford = member && self.lots("lab").balance(now) - held >= minutes;
            let spent = self
                .spent
                .get(&(user.clone(), month_start(now)))
                .copied()
                .unwrap_or(0);
            let reserved: i64 = self
                .sessions
                .values()
                .filter(|s| s.budget && s.user == user)
                .map(|s| s.est)
                .sum();
            afford && spent + reserved + minutes <= MEMBER_LIMIT
        } else {
            let held: i64 = self
                .sessions
                .values()
                .filter(|s| !s.budget && s.user == user)
                .map(|s| s.est)
                .sum();
            self.lots(&user).balance(now) - held >= minutes
        };
        let (st, b) = call(cfg, store, "POST", "/api/quota/sessions", body, now);
        match (expect_allowed, st) {
            (true, 201) => {
                let id = b["session_id"].as_i64().expect("id");
                SERVERS.with(|m| m.borrow_mut().insert(id, server.clone()));
                self.sessions.insert(
                    id,
                    Session {
                        user: user.clone(),
                        budget,
                        start: now,
                        est: minutes,
                    },
                );
                Ok(format!(
                    "{user} started {minutes} min{}",
                    if budget { " on lab" } else { "" }
                ))
            }
            (false, 403) => Ok(format!("{user} refused: {}", b["error"])),
            _ => Err(format!(
                "start {user} {minutes} min budget {budget} (model allows: {expect_allowed}): {st} {b}"
            )),
        }
    }

    fn end(&mut self, rng: &mut Rng, cfg: &Config, store: &mut MemStore, now: i64) -> Result<String, String> {
        let ids: Vec<i64> = self.sessions.keys().copied().collect();
        if ids.is_empty() {
            return Ok("nothing to end".into());
        }
        let id = *rng.pick(&ids);
        let s = self.sessions.remove(&id).expect("session");
        let minutes = ((now - s.start).div_euclid(60)).max(1);
        let (st, b) = call(
            cfg,
            store,
            "POST",
            &format!("/api/quota/sessions/{id}/end"),
            json!({}),
            now,
        );
        if st != 200 {
            return Err(format!("end {id}: {st} {b}"));
        }
        self.charge(&s, minutes, now);
        Ok(format!("ended {id} after {minutes} min"))
    }

    /// A completed session's charge (rate 1: a credit a minute) to the account that pays.
    fn charge(&mut self, s: &Session, minutes: i64, now: i64) {
        let order = self.order;
        let account = if s.budget {
            "lab".to_string()
        } else {
            s.user.clone()
        };
        let l = self.lots(&account);
        l.settle(now);
        l.draw(minutes, now, order);
        if s.budget {
            *self.spent.entry((s.user.clone(), month_start(now))).or_default() += minutes;
        }
    }

    /// Every account's balance and grants as the engine reads them, and its ledger's sum.
    pub fn compare(&mut self, cfg: &Config, store: &mut MemStore, now: i64) -> Result<(), String> {
        for account in ["ann", "bob", "cat", "lab"] {
            let (_, read) = paths(account);
            let (st, v) = call(cfg, store, "GET", &read, Value::Null, now);
            if st != 200 {
                continue; // no record yet
            }
            let l = self.lots(account).clone();
            let live: Vec<(i64, i64)> = {
                let mut g: Vec<(i64, i64, i64)> = l
                    .grants
                    .iter()
                    .filter(|(_, (r, at))| *at > now && *r > 0)
                    .map(|(id, (r, at))| (*at, *id, *r))
                    .collect();
                g.sort();
                g.into_iter().map(|(_, id, r)| (id, r)).collect()
            };
            let got: Vec<(i64, i64)> = v["grants"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|g| (g["grant_id"].as_i64().unwrap(), g["remaining"].as_i64().unwrap()))
                        .collect()
                })
                .unwrap_or_default();
            if v["balance"].as_i64() != Some(l.balance(now)) || got != live {
                return Err(format!(
                    "{account}: engine balance {} grants {got:?}, model balance {} grants {live:?}",
                    v["balance"],
                    l.balance(now)
                ));
            }
        }
        // Every account's stored balance is the sum of its transactions.
        let mut sums: BTreeMap<String, i64> = BTreeMap::new();
        for t in &store.transactions {
            let key = t.budget.clone().unwrap_or_else(|| t.username.clone());
            *sums.entry(key).or_default() += t.amount;
        }
        for (name, u) in &store.users {
            if sums.get(name).copied().unwrap_or(0) != u.balance {
                return Err(format!("{name}'s balance is not the sum of its ledger"));
            }
        }
        for (name, b) in &store.budgets {
            if sums.get(name).copied().unwrap_or(0) != b.balance {
                return Err(format!("budget {name}'s balance is not the sum of its ledger"));
            }
        }
        Ok(())
    }
}
