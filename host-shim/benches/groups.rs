//! What groups cost, through the component (issue 25's measures):
//!
//! 1. A refresh of 100,000 users in 1,000 groups targeting 10 groups (1,000 users change), against
//!    the same refresh targeting the same users by `includeUsers`: SQLite, and PostgreSQL when
//!    `QUOTA_TEST_PG_URL` is set (`scripts/with-postgres.sh`).
//!    Then a hub's group snapshot of all 100,000 users, unchanged and with 1,000 users moved.
//! 2. The spawn gate for a user who reports 50 groups, with 20 restricted accelerators, against
//!    today's gate (no groups, no restrictions), over SQLite `:memory:`.
//!
//!   bash scripts/build-wasm.sh && bash scripts/with-postgres.sh \
//!     cargo bench -p quota-host --features postgres --bench groups
//!
//! Prints figures and ratios; asserts nothing about time.

use std::sync::Arc;
use std::time::Instant;

use quota_core::gate::{StartDecision, StartRequest};
use quota_core::sessions::{EndRequest, EndTarget, Outcome};
use quota_core::Timestamp;
use quota_host::pg::PgDb;
use quota_host::{Database, Runtime, SqlCell, SqliteDb, SqliteOptions, Worker};

const USERS: usize = 100_000;
const GROUPS: usize = 1_000;
const TARGETED: usize = 10;
const RUNS: usize = 5;
const T0: i64 = 1_795_000_000;

#[path = "support/mod.rs"]
mod support;
use support::runtime;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn user(i: usize) -> String {
    format!("u{i:06}")
}

/// User i is in group `g(i % 1000)`, and every tenth user also in `g((i / 10) % 1000)`.
fn groups_of(i: usize) -> Vec<String> {
    let mut g = vec![format!("g{:03}", i % GROUPS)];
    if i % 10 == 0 {
        let other = format!("g{:03}", (i / 10) % GROUPS);
        if other != g[0] {
            g.push(other);
        }
    }
    g.sort();
    g
}

/// 100,000 users and their memberships, written straight into the engine's tables.
fn seed(db: &mut dyn Database) {
    let dialect = db.dialect();
    let sql = |s: &str| match dialect {
        quota_host::Dialect::Sqlite => s.to_string(),
        quota_host::Dialect::Postgres => {
            let mut out = String::new();
            let mut n = 0;
            for c in s.chars() {
                if c == '?' {
                    n += 1;
                    out.push_str(&format!("${n}"));
                } else {
                    out.push(c);
                }
            }
            out
        }
    };
    let users: Vec<Vec<SqlCell>> = (0..USERS)
        .map(|i| vec![user(i).as_str().into(), SqlCell::Int(100)])
        .collect();
    // As the engine stores them: the names joined by newlines, and the index by group.
    let members: Vec<Vec<SqlCell>> = (0..USERS)
        .map(|i| vec![user(i).as_str().into(), groups_of(i).join("\n").as_str().into()])
        .collect();
    let index: Vec<Vec<SqlCell>> = (0..USERS)
        .flat_map(|i| {
            groups_of(i)
                .into_iter()
                .map(move |g| vec![g.as_str().into(), user(i).as_str().into()])
        })
        .collect();
    db.begin().unwrap();
    for chunk in users.chunks(5_000) {
        let q = sql("INSERT INTO users (username, balance, unlimited, updated_at) VALUES (?, ?, 0, 0)");
        db.execute_many(&q, chunk).unwrap();
    }
    for chunk in members.chunks(5_000) {
        let q = sql("INSERT INTO memberships (username, group_names, since) VALUES (?, ?, 0)");
        db.execute_many(&q, chunk).unwrap();
    }
    for chunk in index.chunks(5_000) {
        let q = sql("INSERT INTO group_members (group_name, username) VALUES (?, ?)");
        db.execute_many(&q, chunk).unwrap();
    }
    db.commit().unwrap();
}

/// Median seconds of RUNS refreshes by groups and by the same users, alternating.
fn refreshes(w: &mut Worker) -> (f64, f64, u64) {
    let targeted: Vec<String> = (0..TARGETED).map(|g| format!("g{g:03}")).collect();
    let members: Vec<String> = (0..USERS)
        .filter(|i| groups_of(*i).iter().any(|g| targeted.contains(g)))
        .map(user)
        .collect();
    let by_groups = serde_json::json!({"action": "add", "amount": 1, "rule_name": "groups",
        "targets": {"includeGroups": targeted}})
    .to_string();
    let by_users = serde_json::json!({"action": "add", "amount": 1, "rule_name": "users",
        "targets": {"includeUsers": members}})
    .to_string();
    let (mut g, mut u) = (Vec::new(), Vec::new());
    let mut updated = 0;
    for run in 0..RUNS {
        let now = Timestamp(T0 + run as i64 * 60);
        let t = Instant::now();
        let r = w.refresh(&by_groups, now).unwrap();
        g.push(t.elapsed().as_secs_f64());
        updated = r.users_updated;
        let t = Instant::now();
        let r2 = w.refresh(&by_users, now).unwrap();
        u.push(t.elapsed().as_secs_f64());
        assert_eq!(r2.users_updated, updated, "both target the same users");
    }
    (median(g), median(u), updated)
}

fn refresh_on(name: &str, rt: &Arc<Runtime>, db: Box<dyn Database>) {
    let values = serde_json::json!({"custom": {"authMode": "github"}}).to_string();
    let mut w = Worker::new(rt.clone(), db, &values).unwrap();
    let t = Instant::now();
    seed(w.db());
    eprintln!(
        "{name}: seeded {USERS} users in {GROUPS} groups in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let (g, u, n) = refreshes(&mut w);
    println!(
        "{name}: refresh of {USERS} users targeting {TARGETED} of {GROUPS} groups ({n} change): \
         {:.1} ms by includeGroups, {:.1} ms by includeUsers (the same users): ratio {:.2}",
        g * 1000.0,
        u * 1000.0,
        g / u
    );
    snapshots(name, &mut w);
}

/// A hub's group snapshot of every user (`replace-memberships`, complete): unchanged, then with
/// 1,000 users moved to another group (issue 36's set-based writes).
fn snapshots(name: &str, w: &mut Worker) {
    let users = |moved: usize| -> Vec<(String, Vec<String>)> {
        (0..USERS)
            .map(|i| {
                let g = if i < moved {
                    vec![format!("moved{:03}", i % GROUPS)]
                } else {
                    groups_of(i)
                };
                (user(i), g)
            })
            .collect()
    };
    for (what, moved) in [("unchanged", 0), ("1,000 users moved", 1_000), ("moved back", 0)] {
        let snapshot = users(moved);
        let t = Instant::now();
        let r = w
            .replace_memberships(&snapshot, true, Timestamp(T0 + 3_600))
            .unwrap();
        println!(
            "{name}: group snapshot of {USERS} users, {what}: {:.1} ms ({} changed)",
            t.elapsed().as_secs_f64() * 1000.0,
            r.changed
        );
    }
}

/// 20 accelerators; with `restricted`, 100 groups each allowing one of them (so all 20 are
/// restricted), else none.
fn gate_values(restricted: bool) -> String {
    let accels: serde_json::Map<String, serde_json::Value> = (0..20)
        .map(|a| (format!("a{a:02}"), serde_json::json!({"quotaRate": 2})))
        .collect();
    let groups: serde_json::Map<String, serde_json::Value> = if restricted {
        (0..100)
            .map(|k| {
                (
                    format!("g{k:02}"),
                    serde_json::json!({"accelerators": [format!("a{:02}", k % 20)]}),
                )
            })
            .collect()
    } else {
        serde_json::Map::new()
    };
    serde_json::json!({"custom": {"authMode": "github",
        "quota": {"groups": groups}, "accelerators": accels}})
    .to_string()
}

/// How the gate is measured.
#[derive(Clone, Copy, PartialEq)]
enum Gate {
    /// Today's: no groups configured, none reported.
    Plain,
    /// 20 restricted accelerators; the user reports 50 groups with every start (as JupyterHub does).
    Reported,
    /// 20 restricted accelerators; the user's 50 groups stored, none reported (quota-hub's case).
    Stored,
    /// `Reported`, through the REST route (`POST /api/quota/sessions`, a JSON body), beside
    /// `RestPlain`.
    Rest,
    RestPlain,
}

/// Median ns of one start over 1,000 users, 50 rounds (each start then ended).
fn gate(rt: &Arc<Runtime>, mode: Gate) -> f64 {
    let restricted = !matches!(mode, Gate::Plain | Gate::RestPlain);
    let db = SqliteDb::memory(rt).unwrap();
    let mut w = Worker::new(rt.clone(), Box::new(db), &gate_values(restricted)).unwrap();
    let names: Vec<String> = (0..1000).map(|i| format!("user{i:04}")).collect();
    let rows: Vec<Vec<SqlCell>> = names
        .iter()
        .map(|n| vec![n.as_str().into(), SqlCell::Int(1_000_000_000)])
        .collect();
    w.db().begin().unwrap();
    w.db()
        .execute_many(
            "INSERT INTO users (username, balance, unlimited, updated_at) VALUES (?1, ?2, 0, 0)",
            &rows,
        )
        .unwrap();
    w.db().commit().unwrap();
    let fifty: std::collections::BTreeSet<String> = (0..50).map(|k| format!("g{k:02}")).collect();
    if mode == Gate::Stored {
        let users: Vec<(String, Vec<String>)> = names
            .iter()
            .map(|n| (n.clone(), fifty.iter().cloned().collect()))
            .collect();
        w.replace_memberships(&users, true, Timestamp(T0)).unwrap();
    }
    let reqs: Vec<StartRequest> = names
        .iter()
        .enumerate()
        .map(|(i, n)| StartRequest {
            username: n.clone(),
            resource: Some(format!("a{:02}", i % 20)),
            runtime_minutes: 60,
            server_name: String::new(),
            started_at: None,
            groups: (mode == Gate::Reported).then(|| quota_core::groups::GroupNames::from_set(&fifty).into()),
            budget: None,
        })
        .collect();
    let hub = quota_core::Caller {
        name: "hub".into(),
        admin: false,
        scopes: vec!["quota:sessions".into()],
    };
    let bodies: Vec<String> = reqs
        .iter()
        .map(|r| {
            let mut b = serde_json::json!({"username": r.username, "runtime_minutes": 60,
                "resource_type": r.resource});
            if mode == Gate::Rest {
                b["groups"] = serde_json::json!(fifty);
            }
            b.to_string()
        })
        .collect();
    let mut per = Vec::new();
    for round in 0..50 {
        let now = Timestamp(T0 + round * 7200);
        let mut ids = Vec::with_capacity(reqs.len());
        let t = Instant::now();
        if matches!(mode, Gate::Rest | Gate::RestPlain) {
            for b in &bodies {
                let req = quota_core::Request {
                    method: "POST",
                    path: "/api/quota/sessions",
                    query: "",
                    body: b,
                    caller: Some(&hub),
                };
                let r = w.handle_request(&req, now).unwrap();
                assert_eq!(r.status, 201, "{}", r.body);
            }
        } else {
            for r in &reqs {
                match w.check_start(r, now).unwrap() {
                    StartDecision::Allowed(s) => ids.push(s.session_id),
                    other => panic!("{other:?}"),
                }
            }
        }
        per.push(t.elapsed().as_nanos() as f64 / reqs.len() as f64);
        for id in ids {
            let end = EndRequest {
                target: EndTarget::Id(id),
                ended_at: None,
                outcome: Outcome::Failed,
            };
            w.end_session(&end, now.plus_seconds(60)).unwrap();
        }
        if matches!(mode, Gate::Rest | Gate::RestPlain) {
            w.cleanup_stale(now.plus_seconds(9 * 3600)).unwrap();
        }
    }
    median(per)
}

fn main() {
    let rt = runtime();
    // The gate first (small), alternating the configurations to share the machine's noise.
    let modes = [
        Gate::Plain,
        Gate::Reported,
        Gate::Stored,
        Gate::RestPlain,
        Gate::Rest,
    ];
    let mut figures: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    for _ in 0..3 {
        for (i, m) in modes.iter().enumerate() {
            figures[i].push(gate(&rt, *m));
        }
    }
    let f: Vec<f64> = figures.into_iter().map(median).collect();
    println!("gate, typed check_start over SQLite :memory: (median ns per start):");
    println!("  today (no groups): {:.0}", f[0]);
    println!(
        "  50 reported groups, 20 restricted accelerators: {:.0} (ratio {:.2})",
        f[1],
        f[1] / f[0]
    );
    println!(
        "  50 stored groups, 20 restricted accelerators: {:.0} (ratio {:.2})",
        f[2],
        f[2] / f[0]
    );
    println!(
        "gate, POST /api/quota/sessions (JSON body): today {:.0}, with 50 reported groups and 20 \
         restricted accelerators {:.0} (ratio {:.2})",
        f[3],
        f[4],
        f[4] / f[3]
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("groups.db");
    refresh_on(
        "SQLite",
        &rt,
        Box::new(SqliteDb::open(&rt, &path, SqliteOptions::default()).unwrap()),
    );
    match std::env::var("QUOTA_TEST_PG_URL") {
        Ok(url) => {
            let mut admin = PgDb::connect(&rt, &url).expect("connect");
            admin
                .query("DROP DATABASE IF EXISTS bench_groups WITH (FORCE)", &[])
                .unwrap();
            admin.query("CREATE DATABASE bench_groups", &[]).unwrap();
            let db =
                PgDb::connect(&rt, &format!("{}/bench_groups", url.rsplit_once('/').unwrap().0)).unwrap();
            refresh_on("PostgreSQL", &rt, Box::new(db));
        }
        Err(_) => {
            println!("PostgreSQL: skipped (QUOTA_TEST_PG_URL not set: run through scripts/with-postgres.sh)")
        }
    }
}
