//! The durable figures: start+end cycles on a SQLite file beside the disk's bare commit rate, and
//! one refresh of REFRESH_USERS users through the component beside the native core's.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use quota_core::gate::StartRequest;
use quota_core::store::UserRecord;
use quota_core::{MemStore, Timestamp};
use quota_host::{Checkpointer, Durability, Runtime, SqliteDb, SqliteOptions, Worker};

use super::{end, seed_sql, start, start_req, values, CYCLES, REFRESH_USERS};
use quota_core::engine_call::EngineCall;
use quota_core::store::UserStore;

/// Durable start+end cycles on a file, each call committed, beside the bare commit rate.
pub fn cycles(rt: &Arc<Runtime>, names: &[String], dir: &Path) {
    let bare = bare_commits_per_second(&dir.join("bare.db"));
    println!("SQLite WAL synchronous=FULL, {CYCLES} cycles (check_start + end_session, each committed):");
    for budget in [false, true] {
        let cps = run_cycles(rt, names, &dir.join(format!("cycles-{budget}.db")), budget, false);
        println!(
            "  {}: {cps:.0} cycles/s = {:.0} commits/s; bare commits on this disk {bare:.0}/s; {:.0}% of what the disk allows",
            if budget { "charging a shared budget" } else { "personal" },
            cps * 2.0,
            100.0 * cps * 2.0 / bare
        );
    }
    // Where the rest goes: the pages each commit writes to the WAL (the bare commit writes one),
    // counted on a file whose WAL is never checkpointed during the run.
    for budget in [false, true] {
        let db = dir.join(format!("frames-{budget}.db"));
        let (_, wal) = run_cycles_with(rt, names, &db, budget, false, WAL_CYCLES, true);
        println!(
            "  {}: {:.1} WAL pages per commit ({} cycles, {:.1} MB of WAL; the bare commit: 1)",
            if budget {
                "charging a shared budget"
            } else {
                "personal"
            },
            (wal as f64 / (4096.0 + 24.0)) / (2.0 * WAL_CYCLES as f64),
            WAL_CYCLES,
            wal as f64 / 1e6
        );
    }
}

/// Cycles of the WAL page count: enough to pass the set-up's pages many times over.
const WAL_CYCLES: usize = 500;

/// Durable start+end cycles of 50 users, on their own credit or a budget they all share (with
/// the events turned off when `events_off`: the fault-injection component only).
pub fn run_cycles(rt: &Arc<Runtime>, names: &[String], db: &Path, budget: bool, events_off: bool) -> f64 {
    run_cycles_with(rt, names, db, budget, events_off, CYCLES, false).0
}

/// [`run_cycles`], `cycles` of them, with the WAL never checkpointed when `keep_wal`; also the
/// bytes of WAL the cycles wrote (read before the connection closes and checkpoints it).
fn run_cycles_with(
    rt: &Arc<Runtime>,
    names: &[String],
    db: &Path,
    budget: bool,
    events_off: bool,
    cycles: usize,
    keep_wal: bool,
) -> (f64, u64) {
    let members: Vec<&String> = names.iter().take(50).collect();
    let mut values = values();
    if budget {
        values["custom"]["quota"] = serde_json::json!({"budgets": {"lab": {"users": members}}});
    }
    let mut w = Worker::new(
        rt.clone(),
        Box::new(
            SqliteDb::open(
                rt,
                db,
                SqliteOptions {
                    no_auto_checkpoint: keep_wal,
                    ..SqliteOptions::default()
                },
            )
            .unwrap(),
        ),
        &values.to_string(),
    )
    .unwrap();
    let t0 = Timestamp(1_795_000_000);
    let admin = quota_core::Caller {
        name: "bench".into(),
        admin: true,
        scopes: vec![],
    };
    if events_off {
        let off = quota_core::Request {
            method: "POST",
            path: "/__fault/events-off",
            query: "",
            body: "",
            caller: Some(&admin),
        };
        assert_eq!(w.handle_request(&off, t0).unwrap().status, 200);
    }
    let paths: Vec<String> = if budget {
        vec!["/admin/api/quota/budgets/lab".into()]
    } else {
        members
            .iter()
            .map(|n| format!("/admin/api/quota/users/{n}"))
            .collect()
    };
    for path in &paths {
        let r = w
            .handle_request(
                &quota_core::Request {
                    method: "POST",
                    path,
                    query: "",
                    body: r#"{"action":"set","amount":10000000}"#,
                    caller: Some(&admin),
                },
                t0,
            )
            .unwrap();
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let reqs: Vec<StartRequest> = members
        .iter()
        .map(|n| StartRequest {
            budget: budget.then(|| "lab".to_string()),
            ..start_req(n, "")
        })
        .collect();
    let wal = || std::fs::metadata(db.with_extension("db-wal")).map_or(0, |m| m.len());
    let before = wal();
    let t = Instant::now();
    for i in 0..cycles {
        let now = t0.plus_seconds(i as i64 * 60);
        let id = start(&mut w, &reqs[i % reqs.len()], now);
        end(&mut w, id, now.plus_seconds(61));
    }
    (cycles as f64 / t.elapsed().as_secs_f64(), wal() - before)
}

/// One refresh of REFRESH_USERS users, with the inline and the background checkpoint, and the
/// native core's floor.
pub fn refresh(rt: &Arc<Runtime>, dir: &Path) {
    let rt = rt.clone();
    let t0 = Timestamp(1_795_000_000);
    println!("refresh of {REFRESH_USERS} users on SQLite (one audit row each, one transaction):");
    for (label, background) in [
        ("inline auto-checkpoint", false),
        ("background checkpointer", true),
    ] {
        let rdb = dir.join(format!("refresh-{background}.db"));
        let (el, updated) = refresh_run(&rt, &rdb, background, t0);
        println!(
            "  component, {label:<24} {el:.3} s ({updated} updated, {:.2} us/user)",
            el * 1e6 / REFRESH_USERS as f64
        );
    }
    // The same decisions by the native core over its in-memory store: the floor without storage.
    let mut m = MemStore::new();
    for i in 0..REFRESH_USERS {
        m.put_user(&UserRecord {
            username: format!("u{i:06}"),
            balance: (i % 500) as i64,
            unlimited: false,
            updated_at: t0,
        })
        .unwrap();
    }
    let req =
        quota_core::api::refresh_request_from_json(r#"{"action":"add","amount":10,"rule_name":"native"}"#)
            .unwrap();
    let t = Instant::now();
    quota_core::refresh::refresh(
        &quota_core::Config::default(),
        &mut EngineCall::new(&mut m),
        &req,
        t0,
    )
    .unwrap();
    println!(
        "  native core, in-memory store            {:.3} s",
        t.elapsed().as_secs_f64()
    );
}

pub fn bare_commits_per_second(path: &std::path::Path) -> f64 {
    // The same settings as the engine's SQLite connections (Durability::Full).
    let c = rusqlite::Connection::open(path).unwrap();
    c.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;")
        .unwrap();
    c.execute_batch(
        "CREATE TABLE IF NOT EXISTS bench_counter (n INTEGER); INSERT INTO bench_counter VALUES (0);",
    )
    .unwrap();
    let n = 2000;
    let t = Instant::now();
    for _ in 0..n {
        c.execute_batch("BEGIN IMMEDIATE; UPDATE bench_counter SET n = n + 1; COMMIT;")
            .unwrap();
    }
    n as f64 / t.elapsed().as_secs_f64()
}

/// Fills a fresh database with REFRESH_USERS users, then times one refresh through the component.
pub fn refresh_run(
    rt: &std::sync::Arc<Runtime>,
    rdb: &std::path::Path,
    background: bool,
    t0: Timestamp,
) -> (f64, u64) {
    let options = SqliteOptions {
        durability: Some(Durability::Full),
        no_auto_checkpoint: background,
        ..SqliteOptions::default()
    };
    let b = SqliteDb::open(rt, rdb, options).unwrap();
    let mut w = Worker::new(rt.clone(), Box::new(b), &values().to_string()).unwrap();
    let names: Vec<String> = (0..REFRESH_USERS).map(|i| format!("u{i:06}")).collect();
    seed_sql(
        w.db(),
        names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), (i % 500) as i64)),
    );
    quota_host::checkpoint::checkpoint(&mut SqliteDb::open(rt, rdb, SqliteOptions::default()).unwrap())
        .unwrap();
    let _checkpointer =
        background.then(|| Checkpointer::start(rt, rdb, std::time::Duration::from_millis(100)).unwrap());
    let t = Instant::now();
    let r = w
        .refresh(r#"{"action":"add","amount":10,"rule_name":"bench"}"#, t0)
        .unwrap();
    (t.elapsed().as_secs_f64(), r.users_updated)
}
