#![allow(non_upper_case_globals)]
//! Randomized model-based test: random sequences of every operation over a few users, checked
//! against a deliberately simple reference model, with the ledger invariants asserted after every
//! step. A failure prints the seed; `QUOTA_MODEL_SEED=<seed> cargo test -p quota-core --test model`
//! replays exactly that run. `QUOTA_MODEL_RUNS` sets how many runs (default 110 x 1,000 ops),
//! `QUOTA_MODEL_BASE` the first seed; `scripts/model-at-scale.sh` runs 10,000,000 operations.

mod rng;
use rng::Rng;

use std::collections::{BTreeMap, BTreeSet};

use quota_core::admin::{self, AdminAction, AdminRequest, BatchEntry};
use quota_core::gate::{check_start, StartDecision, StartRequest};
use quota_core::groups::{self as qgroups, MemberChange};
use quota_core::refresh::{refresh, RefreshAction, RefreshParams, RefreshRequest};
use quota_core::sessions::{cleanup_stale, end_session, EndRequest, EndTarget, Outcome};
use quota_core::store::{SessionStatus, TransactionType};
use quota_core::targets::Targets;
use quota_core::usage::{self, Days, GroupBy, Order};
use quota_core::{Config, MemStore, QuotaError, Timestamp};

const ops_per_run: usize = 1000;
const default_runs: u64 = 110;
const users: [&str; 4] = ["alice", "bob", "carol", "dave"];
const servers: [&str; 2] = ["", "gpu"];
const group_names: [&str; 3] = ["g1", "g2", "g3"];

fn config() -> Config {
    Config::from_values(&serde_json::json!({"custom": {"authMode": "github",
        "quota": {"cpuRate": 1, "minimumToStart": 10, "defaultQuota": 20,
            "groups": {"g1": {"defaultQuota": 35, "accelerators": ["dgpu"]}, "g2": {"defaultQuota": 60}, "g3": {}}},
        "accelerators": {"phx": {"quotaRate": 2.5}, "dgpu": {"quotaRate": 4}}}}))
    .expect("model config loads")
}

/// Rates in thousandths, as the model knows them.
fn model_rate(resource: Option<&str>) -> Option<i64> {
    match resource {
        None | Some("cpu") => Some(1000),
        Some("phx") => Some(2500),
        Some("dgpu") => Some(4000),
        _ => None,
    }
}

#[derive(Clone, Debug)]
struct MSession {
    user: String,
    server: String,
    rate: i64,
    est: i64,
    runtime: i64,
    start: i64,
    billable: bool,
    status: SessionStatus,
    minutes: i64,
    cost: i64,
}

#[derive(Default, Clone, Debug)]
struct Model {
    balance: BTreeMap<String, i64>,
    unlimited: BTreeSet<String>,
    sessions: BTreeMap<i64, MSession>,
    next_id: i64,
    runs: BTreeMap<String, (String, (u64, i64, u64))>,
    /// Each user's groups (absent: none).
    groups: BTreeMap<String, BTreeSet<String>>,
}

/// A random set of the model's groups.
fn some_groups(rng: &mut Rng) -> BTreeSet<String> {
    group_names
        .iter()
        .filter(|_| rng.chance(40))
        .map(|g| g.to_string())
        .collect()
}

/// The model's rule for a new member's grant: the highest group grant, else the default (20).
fn model_grant(groups: &BTreeSet<String>) -> i64 {
    let mut grant = None;
    for (g, q) in [("g1", 35), ("g2", 60)] {
        if groups.contains(g) {
            grant = Some(grant.map_or(q, |x: i64| x.max(q)));
        }
    }
    grant.unwrap_or(20)
}

impl Model {
    fn charge(&mut self, id: i64, end: i64, minutes: i64, status: SessionStatus) {
        let s = self.sessions.get_mut(&id).expect("model session");
        s.status = status;
        s.minutes = minutes;
        let _ = end;
        if s.billable && status == SessionStatus::Completed && !self.unlimited.contains(&s.user) {
            let exact = s.rate * minutes;
            s.cost = exact.div_euclid(1000) + i64::from(exact.rem_euclid(1000) != 0);
            *self.balance.entry(s.user.clone()).or_default() -= s.cost;
        }
    }
    fn active(&self, user: &str) -> impl Iterator<Item = (&i64, &MSession)> {
        let user = user.to_string();
        self.sessions
            .iter()
            .filter(move |(_, s)| s.user == user && s.status == SessionStatus::Active)
    }
}

fn billed(elapsed: i64) -> i64 {
    elapsed.div_euclid(60).max(1)
}

fn is_input_refusal(e: &QuotaError) -> bool {
    !matches!(e, QuotaError::Store(_))
}

/// Runs one seeded sequence; returns a description of the first discrepancy.
fn run(seed: u64, ops: usize) -> Result<(), String> {
    let mut rng = Rng(seed);
    let cfg = config();
    let mut store = MemStore::new();
    let mut m = Model::default();
    let mut now: i64 = 1_795_000_000;
    let first_day = usage::day_of(Timestamp(now));
    for step in 0..ops {
        now += rng.below(4) as i64 * rng.below(3600) as i64;
        let t = Timestamp(now);
        let before = store.clone();
        let user = rng.pick(&users).to_string();
        let kind = rng.below(100);
        let what: String;
        let refused: Option<QuotaError>;
        if kind < 35 {
            // check_start
            let resource = *rng.pick(&[None, Some("cpu"), Some("phx"), Some("dgpu"), Some("tpu")]);
            let runtime = *rng.pick(&[-1i64, 0, 1, 5, 30, 120, 480, 481]);
            let server = rng.pick(&servers).to_string();
            let reported = rng.chance(50).then(|| some_groups(&mut rng));
            what = format!("check_start({user}, {resource:?}, {runtime}, {server:?}, groups {reported:?})");
            let req = StartRequest {
                username: user.clone(),
                resource: resource.map(String::from),
                runtime_minutes: runtime,
                server_name: server.clone(),
                started_at: None,
                groups: reported.clone(),
            };
            let effective = reported
                .clone()
                .unwrap_or_else(|| m.groups.get(&user).cloned().unwrap_or_default());
            let forbidden = resource == Some("dgpu") && !effective.contains("g1");
            let got = check_start(&cfg, &mut store, &req, t);
            let rate = model_rate(resource);
            if rate.is_none() || !(1..=480).contains(&runtime) {
                match got {
                    Err(QuotaError::Invalid { .. }) => refused = got.err(),
                    other => {
                        return Err(format!(
                            "step {step} {what}: expected a validation error, got {other:?}"
                        ))
                    }
                }
            } else if forbidden {
                match got {
                    Ok(StartDecision::Forbidden(msg)) => {
                        refused = Some(QuotaError::invalid("forbidden", msg));
                    }
                    other => return Err(format!("step {step} {what}: expected forbidden, got {other:?}")),
                }
            } else {
                refused = None;
                let rate = rate.unwrap_or_default();
                if let Some(g) = &reported {
                    if !g.is_empty() || m.groups.contains_key(&user) {
                        m.groups.insert(user.clone(), g.clone());
                    }
                }
                // Orphan of the same server closes first.
                let orphan = m
                    .active(&user)
                    .find(|(_, s)| s.server == server)
                    .map(|(id, s)| (*id, s.clone()));
                if let Some((id, s)) = orphan {
                    let end = now.min(s.start + s.runtime * 60);
                    m.charge(
                        id,
                        end,
                        billed(end - s.start).min(s.runtime),
                        SessionStatus::Completed,
                    );
                }
                if !m.balance.contains_key(&user) {
                    m.balance.insert(user.clone(), model_grant(&effective));
                }
                let est = rate * runtime;
                let unlimited = m.unlimited.contains(&user);
                let held: i64 = m
                    .active(&user)
                    .filter(|(_, s)| s.billable)
                    .map(|(_, s)| s.est)
                    .sum();
                let bal = m.balance[&user];
                let allowed = unlimited || bal * 1000 - held >= est.max(10_000);
                match (&got, allowed) {
                    (Ok(StartDecision::Allowed(s)), true) => {
                        m.next_id += 1;
                        if s.session_id != m.next_id || s.balance != bal {
                            return Err(format!(
                                "step {step} {what}: got {s:?}, model id {} balance {bal}",
                                m.next_id
                            ));
                        }
                        m.sessions.insert(
                            m.next_id,
                            MSession {
                                user: user.clone(),
                                server,
                                rate,
                                est,
                                runtime,
                                start: now,
                                billable: !unlimited,
                                status: SessionStatus::Active,
                                minutes: 0,
                                cost: 0,
                            },
                        );
                    }
                    (Ok(StartDecision::Refused(r)), false) => {
                        if r.balance != bal {
                            return Err(format!(
                                "step {step} {what}: refusal balance {} model {bal}",
                                r.balance
                            ));
                        }
                    }
                    _ => {
                        return Err(format!(
                            "step {step} {what}: got {got:?}, model allowed={allowed}"
                        ))
                    }
                }
            }
        } else if kind < 60 {
            // end_session, by id (sometimes unknown) or by server
            let by_server = rng.chance(30);
            let outcome = if rng.chance(10) {
                Outcome::Failed
            } else {
                Outcome::Completed
            };
            let target = if by_server {
                EndTarget::Server {
                    username: user.clone(),
                    server_name: rng.pick(&servers).to_string(),
                }
            } else {
                EndTarget::Id(rng.below(m.next_id as u64 + 2) as i64)
            };
            what = format!("end_session({target:?}, {outcome:?})");
            let got = end_session(
                &mut store,
                &EndRequest {
                    target: target.clone(),
                    ended_at: None,
                    outcome,
                },
                t,
            );
            let id = match &target {
                EndTarget::Id(id) => m.sessions.contains_key(id).then_some(*id),
                EndTarget::Server {
                    username,
                    server_name,
                } => m
                    .active(username)
                    .find(|(_, s)| &s.server == server_name)
                    .map(|(id, _)| *id),
            };
            match (id, got) {
                (None, Err(e @ QuotaError::NotFound(_))) => refused = Some(e),
                (Some(id), Ok(r)) => {
                    refused = None;
                    let s = m.sessions[&id].clone();
                    if s.status == SessionStatus::Active {
                        let status = if outcome == Outcome::Failed {
                            SessionStatus::Failed
                        } else {
                            SessionStatus::Completed
                        };
                        m.charge(id, now, billed(now - s.start), status);
                    }
                    let s = &m.sessions[&id];
                    if (r.status, r.cost, r.duration_minutes) != (s.status, s.cost, s.minutes) {
                        return Err(format!("step {step} {what}: got {r:?}, model {s:?}"));
                    }
                }
                (id, got) => return Err(format!("step {step} {what}: got {got:?}, model session {id:?}")),
            }
        } else if kind < 80 {
            // admin operations, amounts partly out of range
            let amount = *rng.pick(&[-10_000_001i64, -500, -5, 0, 1, 7, 100, 10_000_000, 10_000_001]);
            let action = match rng.below(4) {
                0 => AdminAction::Set(amount),
                1 => AdminAction::Add(amount),
                2 => AdminAction::Deduct(amount),
                _ => AdminAction::SetUnlimited(rng.chance(50)),
            };
            what = format!("admin({user}, {action:?})");
            let got = admin::admin_update(
                &mut store,
                &AdminRequest {
                    username: user.clone(),
                    action,
                    description: None,
                },
                "root",
                t,
            );
            let cur = m.balance.get(&user).copied().unwrap_or(0);
            let expect: Result<i64, ()> = match action {
                AdminAction::Set(a) if (0..=10_000_000).contains(&a) => Ok(a),
                AdminAction::Add(a) if (-10_000_000..=10_000_000).contains(&a) => Ok(cur + a),
                AdminAction::Deduct(a) if (1..=10_000_000).contains(&a) && cur >= a => Ok(cur - a),
                AdminAction::SetUnlimited(_) => Ok(cur),
                _ => Err(()),
            };
            match (expect, got) {
                (Ok(b), Ok(r)) if r.balance == b => {
                    refused = None;
                    m.balance.insert(user.clone(), b);
                    if let AdminAction::SetUnlimited(f) = action {
                        if f {
                            m.unlimited.insert(user.clone());
                        } else {
                            m.unlimited.remove(&user);
                        }
                    }
                }
                (Err(()), Err(e)) if is_input_refusal(&e) => refused = Some(e),
                (e, g) => return Err(format!("step {step} {what}: got {g:?}, model {e:?}")),
            }
        } else if kind < 85 {
            let entries: Vec<BatchEntry> = (0..rng.below(4))
                .map(|_| BatchEntry {
                    username: rng.pick(&users).to_string(),
                    amount: rng.chance(70).then(|| *rng.pick(&[-1i64, 0, 3, 50])),
                    unlimited: rng.chance(30).then(|| rng.chance(50)),
                })
                .collect();
            what = format!("batch({entries:?})");
            let items: Vec<_> = entries.iter().cloned().map(Ok).collect();
            let r = admin::batch(&mut store, &items, "root", t)
                .map_err(|e| format!("step {step} {what}: {e}"))?;
            refused = None;
            let mut ok = 0;
            for e in &entries {
                let valid = e.amount.is_some_and(|a| a >= 0) || (e.amount.is_none() && e.unlimited.is_some());
                if valid {
                    ok += 1;
                    let cur = m.balance.get(&e.username).copied().unwrap_or(0);
                    m.balance.insert(e.username.clone(), e.amount.unwrap_or(cur));
                    match e.unlimited {
                        Some(true) => {
                            m.unlimited.insert(e.username.clone());
                        }
                        Some(false) => {
                            m.unlimited.remove(&e.username);
                        }
                        None => {}
                    }
                }
            }
            if r.success != ok || r.failed != entries.len() - ok {
                return Err(format!("step {step} {what}: got {r:?}, model {ok} ok"));
            }
        } else if kind < 95 {
            let action = if rng.chance(30) {
                RefreshAction::Set
            } else {
                RefreshAction::Add
            };
            let amount = *rng.pick(&[-60i64, -5, 0, 5, 40, 200]);
            let max_balance = rng.chance(40).then(|| *rng.pick(&[0i64, 30, 100]));
            let min_balance = rng.chance(40).then(|| *rng.pick(&[0i64, 5, 25]));
            let mut targets = Targets {
                include_unlimited: rng.chance(30),
                balance_below: rng.chance(30).then(|| *rng.pick(&[0i64, 20, 50])),
                ..Targets::default()
            };
            if rng.chance(30) {
                targets.include_users = Some([user.clone()].into_iter().collect());
            }
            if rng.chance(20) {
                targets.exclude_users = [rng.pick(&users).to_string()].into_iter().collect();
            }
            if rng.chance(35) {
                let g = some_groups(&mut rng);
                targets.include_groups = (!g.is_empty()).then_some(g);
            }
            if rng.chance(20) {
                targets.exclude_groups = some_groups(&mut rng);
            }
            let run_id = rng.chance(40).then(|| format!("run{}", rng.below(3)));
            let dry_run = rng.chance(15);
            let params = RefreshParams {
                rule_name: "r".into(),
                action,
                amount,
                max_balance,
                min_balance,
                targets: targets.clone(),
            };
            what = format!("refresh({params:?}, {run_id:?}, dry={dry_run})");
            let got = refresh(
                &mut store,
                &RefreshRequest {
                    params: params.clone(),
                    run_id: run_id.clone(),
                    dry_run,
                },
                t,
            );
            let fp = params.fingerprint();
            let replay = run_id
                .as_ref()
                .filter(|_| !dry_run)
                .and_then(|r| m.runs.get(r).cloned());
            if action == RefreshAction::Set && amount < 0 {
                match got {
                    Err(e @ QuotaError::Invalid { .. }) => refused = Some(e),
                    g => return Err(format!("step {step} {what}: expected 400, got {g:?}")),
                }
            } else if let Some((old_fp, counts)) = replay {
                match got {
                    Ok(r) if old_fp == fp && (r.users_updated, r.total_change, r.skipped) == counts => {
                        refused = None
                    }
                    Err(e @ QuotaError::Conflict(_)) if old_fp != fp => refused = Some(e),
                    g => return Err(format!("step {step} {what}: replay expected, got {g:?}")),
                }
            } else {
                refused = None;
                let (mut updated, mut total, mut skipped) = (0u64, 0i64, 0u64);
                let mut next = m.balance.clone();
                for (name, &cur) in &m.balance {
                    let unl = m.unlimited.contains(name);
                    let matched = (targets.include_unlimited || !unl)
                        && targets.balance_below.is_none_or(|b| cur < b)
                        && targets.include_users.as_ref().is_none_or(|s| s.contains(name))
                        && !targets.exclude_users.contains(name)
                        && {
                            let none = BTreeSet::new();
                            let of = m.groups.get(name).unwrap_or(&none);
                            targets
                                .include_groups
                                .as_ref()
                                .is_none_or(|g| g.iter().any(|x| of.contains(x)))
                                && !targets.exclude_groups.iter().any(|x| of.contains(x))
                        };
                    let new = if !matched {
                        cur
                    } else if action == RefreshAction::Set {
                        amount
                    } else if amount > 0 {
                        max_balance
                            .map_or(cur + amount, |c| (cur + amount).min(c))
                            .max(cur)
                    } else if amount < 0 {
                        (cur + amount).max(min_balance.unwrap_or(0)).min(cur)
                    } else {
                        cur
                    };
                    if new == cur {
                        skipped += 1;
                    } else {
                        updated += 1;
                        total += new - cur;
                        next.insert(name.clone(), new);
                    }
                }
                match got {
                    Ok(r) if (r.users_updated, r.total_change, r.skipped) == (updated, total, skipped) => {
                        if !dry_run {
                            m.balance = next;
                            if let Some(id) = run_id {
                                m.runs.insert(id, (fp, (updated, total, skipped)));
                            }
                        }
                    }
                    g => {
                        return Err(format!(
                            "step {step} {what}: got {g:?}, model ({updated}, {total}, {skipped})"
                        ))
                    }
                }
            }
        } else if kind < 98 {
            // group membership: a report, a group change, or a snapshot
            let g = group_names[rng.below(3) as usize];
            let members: BTreeSet<String> = users
                .iter()
                .filter(|_| rng.chance(40))
                .map(|u| u.to_string())
                .collect();
            refused = None;
            match rng.below(4) {
                0 => {
                    let set = some_groups(&mut rng);
                    what = format!("report({user}, {set:?})");
                    qgroups::report(&mut store, &user, &set, t)
                        .map_err(|e| format!("step {step} {what}: {e}"))?;
                    if !set.is_empty() || m.groups.contains_key(&user) {
                        m.groups.insert(user.clone(), set);
                    }
                }
                1 => {
                    what = format!("set_members({g}, {members:?})");
                    qgroups::change_members(&mut store, g, &MemberChange::Set(members.clone()), t)
                        .map_err(|e| format!("step {step} {what}: {e}"))?;
                    for u in users {
                        let has = m.groups.get(u).is_some_and(|s| s.contains(g));
                        if members.contains(u) && !has {
                            m.groups.entry(u.to_string()).or_default().insert(g.to_string());
                        } else if !members.contains(u) && has {
                            m.groups.entry(u.to_string()).or_default().remove(g);
                        }
                    }
                }
                2 => {
                    let add = rng.chance(50);
                    what = format!("{}({g}, {members:?})", if add { "add" } else { "remove" });
                    let change = if add {
                        MemberChange::Add(members.clone())
                    } else {
                        MemberChange::Remove(members.clone())
                    };
                    qgroups::change_members(&mut store, g, &change, t)
                        .map_err(|e| format!("step {step} {what}: {e}"))?;
                    for u in &members {
                        let has = m.groups.get(u).is_some_and(|s| s.contains(g));
                        if add && !has {
                            m.groups.entry(u.clone()).or_default().insert(g.to_string());
                        } else if !add && has {
                            m.groups.entry(u.clone()).or_default().remove(g);
                        }
                    }
                }
                _ => {
                    let complete = rng.chance(50);
                    let snapshot: BTreeMap<String, BTreeSet<String>> = members
                        .iter()
                        .map(|u| (u.clone(), some_groups(&mut rng)))
                        .collect();
                    what = format!("replace({snapshot:?}, complete={complete})");
                    qgroups::replace(&mut store, &snapshot, complete, t)
                        .map_err(|e| format!("step {step} {what}: {e}"))?;
                    if complete {
                        for (u, set) in m.groups.iter_mut() {
                            if !snapshot.contains_key(u) {
                                set.clear();
                            }
                        }
                    }
                    for (u, set) in snapshot {
                        if !set.is_empty() || m.groups.contains_key(&u) {
                            m.groups.insert(u, set);
                        }
                    }
                }
            }
        } else {
            what = "cleanup_stale".into();
            let cleaned = cleanup_stale(&mut store, t).map_err(|e| format!("step {step} {what}: {e}"))?;
            refused = None;
            let mut expect = Vec::new();
            for (id, s) in m.sessions.iter_mut() {
                if s.status == SessionStatus::Active && now - s.start > 8 * 3600 {
                    s.status = SessionStatus::CleanedUp;
                    s.minutes = (now - s.start).div_euclid(60);
                    expect.push(*id);
                }
            }
            let got: Vec<i64> = cleaned.iter().map(|c| c.session_id).collect();
            if got != expect {
                return Err(format!("step {step} {what}: cleaned {got:?}, model {expect:?}"));
            }
        }

        // Invariants after every step.
        if let Some(e) = refused {
            if store != before {
                return Err(format!("step {step} {what}: refused ({e}) but the store changed"));
            }
        }
        let mut sums: BTreeMap<&str, i64> = BTreeMap::new();
        let mut usage_per_session: BTreeMap<String, u32> = BTreeMap::new();
        for tx in &store.transactions {
            if tx.amount != tx.balance_after - tx.balance_before {
                return Err(format!(
                    "step {step} {what}: transaction {} does not reconcile: {tx:?}",
                    tx.id
                ));
            }
            *sums.entry(tx.username.as_str()).or_default() += tx.amount;
            if tx.transaction_type == TransactionType::Usage {
                let key = tx.description.split(':').next().unwrap_or_default().to_string();
                *usage_per_session.entry(key).or_default() += 1;
            }
        }
        if let Some((s, n)) = usage_per_session.iter().find(|(_, n)| **n > 1) {
            return Err(format!("step {step} {what}: {s} has {n} usage transactions"));
        }
        for (name, u) in &store.users {
            if sums.get(name.as_str()).copied().unwrap_or(0) != u.balance {
                return Err(format!(
                    "step {step} {what}: {name} balance {} != sum of transactions",
                    u.balance
                ));
            }
            if m.balance.get(name) != Some(&u.balance) || m.unlimited.contains(name) != u.unlimited {
                return Err(format!(
                    "step {step} {what}: {name} is {} (unlimited {}), model {:?} (unlimited {})",
                    u.balance,
                    u.unlimited,
                    m.balance.get(name),
                    m.unlimited.contains(name)
                ));
            }
        }
        if store.users.len() != m.balance.len() {
            return Err(format!(
                "step {step} {what}: {} records, model {}",
                store.users.len(),
                m.balance.len()
            ));
        }
        for u in users {
            let stored = store.memberships.get(u).map(|x| &x.groups);
            let model = m.groups.get(u);
            if stored.filter(|g| !g.is_empty()) != model.filter(|g| !g.is_empty()) {
                return Err(format!(
                    "step {step} {what}: {u} is in {stored:?}, model {model:?}"
                ));
            }
        }
        for (id, s) in &store.sessions {
            let ms = &m.sessions[id];
            if s.status != ms.status {
                return Err(format!(
                    "step {step} {what}: session {id} is {:?}, model {:?}",
                    s.status, ms.status
                ));
            }
        }
        if step % 100 == 99 {
            // A random range of the days so far, and all of them.
            let today = usage::day_of(t);
            let a = first_day + rng.below((today - first_day + 1) as u64) as i64;
            let b = a + rng.below((today - a + 1) as u64) as i64;
            check_usage(&mut store, a, b, false).map_err(|e| format!("step {step} {what}: {e}"))?;
            check_usage(&mut store, first_day, today, true)
                .map_err(|e| format!("step {step} {what}: {e}"))?;
        }
    }
    Ok(())
}

/// The usage reports over the days `first` to `last` against the ledger: each user's, resource
/// type's and day's credits equal the sum of their `usage` transactions of those days; over the
/// whole run (`whole`) the minutes and sessions equal the completed sessions'.
fn check_usage(store: &mut MemStore, first: i64, last: i64, whole: bool) -> Result<(), String> {
    let days = Days::checked(first, last).map_err(|e| e.to_string())?;
    let mut by_user: BTreeMap<String, i64> = BTreeMap::new();
    let mut by_resource: BTreeMap<String, i64> = BTreeMap::new();
    let mut by_day: BTreeMap<String, i64> = BTreeMap::new();
    for tx in &store.transactions {
        let day = usage::day_of(tx.created_at);
        if tx.transaction_type != TransactionType::Usage || day < first || day > last {
            continue;
        }
        *by_user.entry(tx.username.clone()).or_default() -= tx.amount;
        *by_resource
            .entry(tx.resource_type.clone().unwrap_or_default())
            .or_default() -= tx.amount;
        *by_day.entry(usage::day_text(day)).or_default() -= tx.amount;
    }
    let report = |store: &mut MemStore, g: GroupBy| -> Result<BTreeMap<String, i64>, String> {
        let r = usage::report(store, days, g, Order::Key, None, 1000).map_err(|e| e.to_string())?;
        Ok(r.rows
            .into_iter()
            .filter(|row| row.usage.credits != 0)
            .map(|row| (row.key, row.usage.credits))
            .collect())
    };
    for (g, want) in [
        (GroupBy::User, &by_user),
        (GroupBy::Resource, &by_resource),
        (GroupBy::Day, &by_day),
    ] {
        let got = report(store, g)?;
        let want: BTreeMap<String, i64> = want
            .iter()
            .filter(|(_, c)| **c != 0)
            .map(|(k, c)| (k.clone(), *c))
            .collect();
        if got != want {
            return Err(format!(
                "usage by {g:?} of days {first}..={last}: {got:?}, ledger {want:?}"
            ));
        }
    }
    if whole {
        let totals = usage::report(store, days, GroupBy::Day, Order::Key, None, 1)
            .map_err(|e| e.to_string())?
            .totals;
        let done: Vec<_> = store
            .sessions
            .values()
            .filter(|s| s.status == SessionStatus::Completed)
            .collect();
        let minutes: i64 = done.iter().map(|s| s.duration_minutes.unwrap_or(0)).sum();
        let charged: i64 = done.iter().map(|s| s.cost).sum();
        let want = (charged, minutes, done.len() as i64);
        if (totals.credits, totals.minutes, totals.sessions) != want {
            return Err(format!(
                "usage totals {totals:?}, completed sessions (credits, minutes, sessions) {want:?}"
            ));
        }
    }
    Ok(())
}

#[test]
fn random_operations_match_the_reference_model() {
    let env_u64 = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
    let seeds: Vec<u64> = match env_u64("QUOTA_MODEL_SEED") {
        Some(seed) => vec![seed],
        None => {
            let base = env_u64("QUOTA_MODEL_BASE").unwrap_or(0x5EED_0000_u64);
            (0..env_u64("QUOTA_MODEL_RUNS").unwrap_or(default_runs))
                .map(|i| base + i)
                .collect()
        }
    };
    // Progress for long runs (scripts/model-at-scale.sh): a line every `every` seeds.
    let every = (seeds.len() / 20).max(1000);
    let started = std::time::Instant::now();
    let mut total = 0;
    for (i, seed) in seeds.iter().enumerate() {
        if let Err(e) = run(*seed, ops_per_run) {
            panic!("model mismatch with seed {seed} (replay: QUOTA_MODEL_SEED={seed} cargo test -p quota-core --test model)\n{e}");
        }
        total += ops_per_run;
        if (i + 1) % every == 0 {
            eprintln!("model: {} of {} seeds, {total} operations", i + 1, seeds.len());
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{total} random operations over {} seeds (first {}) matched the model in {secs:.1} s: {:.0} operations/s",
        seeds.len(),
        seeds[0],
        total as f64 / secs.max(1e-9)
    );
    assert!(total >= ops_per_run);
}
