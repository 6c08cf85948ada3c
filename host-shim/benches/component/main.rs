//! Benchmarks of the engine through the component. Run after `bash scripts/build-wasm.sh`:
//! `cargo bench -p quota-host --bench component`. Prints figures and ratios; asserts nothing about
//! time.
//!
//! 1. check_start / end_session: component over SQLite `:memory:` vs the native core over its
//!    in-memory store, same run.
//! 2. Durable start+end cycles on SQLite (WAL, synchronous=FULL), each call its own committed
//!    transaction, beside the bare fsync-bound commit rate of the same disk.
//! 3. One refresh of 100,000 users (one audit row each) on SQLite.
//! 4. What writing events costs check_start and end_session (`events.rs`; `BENCH_PROFILE=events`).
//!
//! `BENCH_PROFILE=1` runs only the check_start/end_session loop and `BENCH_PROFILE=refresh` only the
//! refresh, for `perf record`; `BENCH_PROFILE=gate` prints check_start's median (typed, and as the
//! hub's REST request) as one JSON line for the other languages' benches; `BENCH_PROFILE=budget`
//! only the gate charging a shared budget (with and without a member limit) beside the personal one;
//! `BENCH_PROFILE=durable` only the durable cycles on a file; `BENCH_PROFILE=list` only the admin list
//! of 50,000 users (also in the full run).
//! `QUOTA_BENCH_COMPONENT=path` benches another build of the component (an older commit's).

use std::path::PathBuf;
use std::time::Instant;

use quota_core::engine_call::EngineCall;
use quota_core::gate::{check_start, StartDecision, StartRequest};
use quota_core::sessions::{end_session, EndRequest, EndTarget, Outcome};
use quota_core::store::{Store, UserRecord};
use quota_core::{Config, MemStore, Timestamp};
use quota_host::{Database, Limits, Runtime, SqlCell, SqliteDb, Worker};

const USERS: usize = 1000;
const ROUNDS: usize = 100;
const CYCLES: usize = 3000;
const REFRESH_USERS: usize = 100_000;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn values() -> serde_json::Value {
    serde_json::json!({"custom": {"authMode": "github", "accelerators": {"phx": {"quotaRate": 2.5}}}})
}

fn names() -> Vec<String> {
    (0..USERS).map(|i| format!("user{i:05}")).collect()
}

fn seed(store: &mut dyn Store, names: &[String], t0: Timestamp) {
    for n in names {
        store
            .put_user(&UserRecord {
                username: n.clone(),
                balance: 1_000_000_000,
                unlimited: false,
                updated_at: t0,
            })
            .unwrap();
    }
}

/// Users (name, balance) written straight into an engine database (after the worker created the
/// schema).
fn seed_sql<'a>(db: &mut dyn Database, users: impl Iterator<Item = (&'a str, i64)>) {
    let rows: Vec<Vec<SqlCell>> = users.map(|(n, b)| vec![n.into(), SqlCell::Int(b)]).collect();
    db.begin().unwrap();
    db.execute_many(
        "INSERT INTO users (username, balance, unlimited, updated_at) VALUES (?1, ?2, 0, 0)",
        &rows,
    )
    .unwrap();
    db.commit().unwrap();
}

/// Median ns per check_start and per end_session for the native core over its in-memory store.
fn native(names: &[String]) -> (f64, f64) {
    let cfg = Config::from_values(&values()).unwrap();
    let mut b = MemStore::new();
    let t0 = Timestamp(1_795_000_000);
    seed(&mut b, names, t0);
    let (mut s_ns, mut e_ns) = (Vec::new(), Vec::new());
    let mut now = t0;
    for _ in 0..ROUNDS {
        let mut ids = Vec::with_capacity(names.len());
        let t = Instant::now();
        for n in names {
            let req = StartRequest {
                username: n.clone(),
                resource: Some("phx".into()),
                runtime_minutes: 60,
                server_name: String::new(),
                started_at: None,
                groups: None,
                budget: None,
            };
            let StartDecision::Allowed(s) =
                check_start(&cfg, &mut EngineCall::new(&mut b), &req, now).unwrap()
            else {
                panic!("refused")
            };
            ids.push(s.session_id);
        }
        s_ns.push(t.elapsed().as_nanos() as f64 / names.len() as f64);
        now = now.plus_seconds(125);
        let t = Instant::now();
        for id in ids {
            end_session(
                &mut EngineCall::new(&mut b),
                &EndRequest {
                    target: EndTarget::Id(id),
                    ended_at: None,
                    outcome: Outcome::Completed,
                },
                now,
            )
            .unwrap();
        }
        e_ns.push(t.elapsed().as_nanos() as f64 / names.len() as f64);
    }
    (median(s_ns), median(e_ns))
}

fn start_req(name: &str, server: &str) -> StartRequest {
    StartRequest {
        username: name.to_string(),
        resource: Some("phx".into()),
        runtime_minutes: 60,
        server_name: server.to_string(),
        started_at: None,
        groups: None,
        budget: None,
    }
}

fn start(w: &mut Worker, req: &StartRequest, now: Timestamp) -> i64 {
    match w.check_start(req, now).unwrap() {
        StartDecision::Allowed(s) => s.session_id,
        StartDecision::Refused(r) => panic!("refused: {}", r.message),
        StartDecision::Forbidden(m) => panic!("forbidden: {m}"),
    }
}

fn end(w: &mut Worker, id: i64, now: Timestamp) {
    let req = EndRequest {
        target: EndTarget::Id(id),
        ended_at: None,
        outcome: Outcome::Completed,
    };
    w.end_session(&req, now).unwrap();
}

/// A worker over SQLite `:memory:` (the hosts' in-memory database) whose `names` can afford anything.
fn rich_users_in_memory(rt: &std::sync::Arc<Runtime>, names: &[String]) -> Worker {
    let mut w = Worker::new(
        rt.clone(),
        Box::new(SqliteDb::memory(rt).unwrap()),
        &values().to_string(),
    )
    .unwrap();
    seed_sql(w.db(), names.iter().map(|n| (n.as_str(), 1_000_000_000)));
    w
}

/// The same through the component, over SQLite `:memory:`.
fn component(rt: &std::sync::Arc<Runtime>, names: &[String]) -> (f64, f64) {
    let w = rich_users_in_memory(rt, names);
    let reqs: Vec<StartRequest> = names.iter().map(|n| start_req(n, "")).collect();
    rounds(w, &reqs)
}

/// The same, every start charging one shared budget whose members they all are (with a monthly
/// limit per member when `limit`): the budget's row locked, its reservations summed, the
/// member's month read.
fn component_budget(rt: &std::sync::Arc<Runtime>, names: &[String], limit: bool) -> (f64, f64) {
    let w = budget_worker(rt, names, limit);
    let reqs: Vec<StartRequest> = names
        .iter()
        .map(|n| StartRequest {
            budget: Some("lab".into()),
            ..start_req(n, "")
        })
        .collect();
    rounds(w, &reqs)
}

/// A worker over SQLite `:memory:` with one budget, `lab`, that `names` share (each with a monthly
/// limit when `limit`) and that can afford anything; the members' own balances are 0.
fn budget_worker(rt: &std::sync::Arc<Runtime>, names: &[String], limit: bool) -> Worker {
    let mut values = values();
    let mut lab = serde_json::json!({ "users": names });
    if limit {
        lab["memberLimit"] = serde_json::json!(10_000_000);
    }
    values["custom"]["quota"] = serde_json::json!({ "budgets": { "lab": lab } });
    let mut w = Worker::new(
        rt.clone(),
        Box::new(SqliteDb::memory(rt).unwrap()),
        &values.to_string(),
    )
    .unwrap();
    seed_sql(w.db(), names.iter().map(|n| (n.as_str(), 0)));
    w.db().begin().unwrap();
    w.db()
        .execute_many(
            "INSERT INTO budgets (name, balance, updated_at) VALUES ('lab', 1000000000000, 0)",
            &[vec![]],
        )
        .unwrap();
    w.db().commit().unwrap();
    w
}

/// Median ns per start and per end over `ROUNDS` rounds of every request, then every end.
fn rounds(mut w: Worker, reqs: &[StartRequest]) -> (f64, f64) {
    let t0 = Timestamp(1_795_000_000);
    let (mut s_ns, mut e_ns) = (Vec::new(), Vec::new());
    let mut now = t0;
    for _ in 0..ROUNDS {
        let mut ids = Vec::with_capacity(reqs.len());
        let t = Instant::now();
        for r in reqs {
            ids.push(start(&mut w, r, now));
        }
        s_ns.push(t.elapsed().as_nanos() as f64 / reqs.len() as f64);
        now = now.plus_seconds(125);
        let t = Instant::now();
        for id in ids {
            end(&mut w, id, now);
        }
        e_ns.push(t.elapsed().as_nanos() as f64 / reqs.len() as f64);
    }
    (median(s_ns), median(e_ns))
}

/// Median ns of `POST /api/quota/sessions` through `handle-request` (each call its own transaction).
fn rest_gate(rt: &std::sync::Arc<Runtime>, names: &[String]) -> f64 {
    let mut w = rich_users_in_memory(rt, names);
    let hub = quota_core::Caller {
        name: "hub".into(),
        admin: false,
        scopes: vec!["quota:sessions".into()],
    };
    let bodies: Vec<String> = names
        .iter()
        .map(|n| format!(r#"{{"username":"{n}","runtime_minutes":60,"resource_type":"phx"}}"#))
        .collect();
    let mut per_call = Vec::new();
    for round in 0..20 {
        let now = Timestamp(1_795_000_000 + round * 7200);
        for b in &bodies {
            let t = Instant::now();
            let r = w
                .handle_request(
                    &quota_core::Request {
                        method: "POST",
                        path: "/api/quota/sessions",
                        query: "",
                        body: b,
                        caller: Some(&hub),
                    },
                    now,
                )
                .unwrap();
            per_call.push(t.elapsed().as_nanos() as f64);
            assert_eq!(r.status, 201, "{}", r.body);
        }
        // End them all so the next round starts from the same state.
        w.cleanup_stale(now.plus_seconds(9 * 3600)).unwrap();
    }
    median(per_call)
}

mod durable;
mod events;
mod list;
mod running;
#[path = "../support/mod.rs"]
mod support;

fn main() {
    let rt = support::runtime();
    let names = names();

    // `BENCH_PROFILE=refresh`: only the 100,000-user refresh, five times, for `perf record`.
    if std::env::var("BENCH_PROFILE").as_deref() == Ok("refresh") {
        let dir = std::env::temp_dir().join(format!("quota-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..5 {
            let (el, _) =
                durable::refresh_run(&rt, &dir.join(format!("p{i}.db")), true, Timestamp(1_795_000_000));
            println!("refresh {el:.3} s");
        }
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    // `BENCH_PROFILE=gate`: check_start through the component, typed and as the REST request a hub
    // sends (`POST /api/quota/sessions`), median ns per call as one JSON line (for the Python and
    // JavaScript benches, which print it beside their own).
    if std::env::var("BENCH_PROFILE").as_deref() == Ok("gate") {
        let (typed, _) = component(&rt, &names[..200]);
        println!(
            "{}",
            serde_json::json!({"check_start_typed_ns": typed, "check_start_rest_ns": rest_gate(&rt, &names[..200])})
        );
        return;
    }
    // `BENCH_PROFILE=budget`: only the gate charging a shared budget beside the personal gate.
    if std::env::var("BENCH_PROFILE").as_deref() == Ok("budget") {
        let (cs, _) = component(&rt, &names);
        let (bs, _) = component_budget(&rt, &names, false);
        let (ls, _) = component_budget(&rt, &names, true);
        println!(
            "check_start: personal {cs:.0} ns, budget {bs:.0} ns ({:.2}x), with memberLimit {ls:.0} ns ({:.2}x)",
            bs / cs,
            ls / cs
        );
        running::budget_with_running(&rt, cs);
        return;
    }
    // `BENCH_PROFILE=durable`: only the durable start+end cycles on a file, for `perf record`.
    if std::env::var("BENCH_PROFILE").as_deref() == Ok("durable") {
        let dir = std::env::temp_dir().join(format!("quota-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        durable::cycles(&rt, &names, &dir);
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    if std::env::var("BENCH_PROFILE").as_deref() == Ok("list") {
        let dir = tempfile::tempdir().unwrap();
        list::admin_list(&rt, &dir.path().join("list.db"));
        return;
    }
    if std::env::var("BENCH_PROFILE").as_deref() == Ok("events") {
        events::cost(&names);
        return;
    }
    // `BENCH_PROFILE=1`: only the component check_start/end_session loop, for `perf record`.
    if std::env::var("BENCH_PROFILE").is_ok() {
        for _ in 0..20 {
            component(&rt, &names);
        }
        return;
    }

    // A bare export call: no imports, a small result.
    let mut w0 = Worker::new(
        rt.clone(),
        Box::new(SqliteDb::memory(&rt).unwrap()),
        &values().to_string(),
    )
    .unwrap();
    let t = Instant::now();
    for _ in 0..100_000 {
        std::hint::black_box(w0.rates().unwrap());
    }
    println!(
        "bare component call (get-rates, no imports, in a read transaction): {:.0} ns",
        t.elapsed().as_nanos() as f64 / 1e5
    );

    let mut w1 = Worker::new(
        rt.clone(),
        Box::new(SqliteDb::memory(&rt).unwrap()),
        &values().to_string(),
    )
    .unwrap();
    seed_sql(w1.db(), names[..1].iter().map(|n| (n.as_str(), 0)));
    let t = Instant::now();
    for _ in 0..100_000 {
        std::hint::black_box(w1.user_detail(&names[0], Timestamp(1_795_000_000)).unwrap());
    }
    println!(
        "component call with two imports (user-detail, in a read transaction): {:.0} ns",
        t.elapsed().as_nanos() as f64 / 1e5
    );

    let (ns, ne) = native(&names);
    let (cs, ce) = component(&rt, &names);
    let (bs, be) = component_budget(&rt, &names, false);
    let (ls, le) = component_budget(&rt, &names, true);
    println!("in-memory, median of {ROUNDS} rounds x {USERS} users:");
    println!(
        "  check_start  native {ns:>7.0} ns/op   component {cs:>7.0} ns/op   ratio {:.2}x",
        cs / ns
    );
    println!(
        "  end_session  native {ne:>7.0} ns/op   component {ce:>7.0} ns/op   ratio {:.2}x",
        ce / ne
    );
    println!("charging a shared budget of {USERS} members, all running at once (component):");
    println!(
        "  check_start  personal {cs:>7.0} ns/op   budget {bs:>7.0} ns/op ({:.2}x)   with memberLimit {ls:>7.0} ns/op ({:.2}x)",
        bs / cs,
        ls / cs
    );
    println!(
        "  end_session  personal {ce:>7.0} ns/op   budget {be:>7.0} ns/op ({:.2}x)   with memberLimit {le:>7.0} ns/op ({:.2}x)",
        be / ce,
        le / ce
    );

    running::budget_with_running(&rt, cs);

    events::cost(&names);

    let dir = std::env::temp_dir().join(format!("quota-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    durable::cycles(&rt, &names, &dir);
    durable::refresh(&rt, &dir);
    list::admin_list(&rt, &dir.join("list.db"));
    let _ = std::fs::remove_dir_all(&dir);
}
