//! PostgreSQL beside SQLite, in one run (a real server from `scripts/with-postgres.sh`):
//!
//! 1. Durable session ends per second with 8 concurrent writers (each its own connection and
//!    engine instance; every end one committed transaction), and the conflict retries they needed.
//! 2. One refresh of 100,000 users (and of 1,000,000 with `BENCH_MILLION=1`), in one transaction and
//!    then in chunks (with a run id, as scheduled runs have), with the longest chunk transaction and
//!    the spawn gate's latency (p50, p99) measured from another connection while the refresh runs.
//! 3. SERIALIZABLE against READ COMMITTED with `FOR UPDATE` row locks, on the session end's
//!    statements in raw SQL, over many users and over a few hot ones.
//!
//!   bash scripts/build-wasm.sh && bash scripts/with-postgres.sh \
//!     cargo bench -p quota-host --features postgres --bench postgres
//!
//! 4. The sweep (`POST .../expire`, in chunks) over 100,000 users with one grant each, half due.
//!
//! `BENCH_ISOLATION_ONLY=1` runs section 3 alone (after 4); `BENCH_SWEEP_ONLY=1` section 4 alone.
//!
//! Prints figures; asserts nothing about time.

mod isolation;

use isolation::isolation;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use quota_core::sessions::{EndRequest, EndTarget, Outcome};
use quota_core::Timestamp;
use quota_host::pg::PgDb;
use quota_host::{Database, Limits, Runtime, SqliteDb, SqliteOptions, Worker};

const WRITERS: usize = 8;
const SESSIONS: i64 = 16_000;
const T0: i64 = 1_795_000_000;

fn values() -> String {
    serde_json::json!({"custom": {"authMode": "github", "quota": {"cpuRate": 1, "minimumToStart": 1, "defaultQuota": 0}}})
        .to_string()
}

fn runtime() -> Arc<Runtime> {
    static RT: std::sync::OnceLock<Arc<Runtime>> = std::sync::OnceLock::new();
    RT.get_or_init(|| {
        let path =
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/wasm/quota-engine.wasm");
        Runtime::load(&path, Limits::default()).expect("component (bash scripts/build-wasm.sh)")
    })
    .clone()
}

#[derive(Clone)]
enum Target {
    Pg(String),
    Sqlite(std::path::PathBuf),
}

impl Target {
    fn open(&self) -> Box<dyn Database> {
        match self {
            Target::Pg(url) => Box::new(PgDb::connect(&runtime(), url).expect("connect")),
            Target::Sqlite(p) => {
                Box::new(SqliteDb::open(&runtime(), p, SqliteOptions::default()).expect("open"))
            }
        }
    }
    fn name(&self) -> &'static str {
        match self {
            Target::Pg(_) => "PostgreSQL",
            Target::Sqlite(_) => "SQLite",
        }
    }
}

fn pg_database(name: &str) -> Target {
    let url =
        std::env::var("QUOTA_TEST_PG_URL").expect("QUOTA_TEST_PG_URL: run through scripts/with-postgres.sh");
    let mut admin = PgDb::connect(&runtime(), &url).expect("connect");
    admin
        .query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"), &[])
        .expect("drop");
    admin
        .query(&format!("CREATE DATABASE {name}"), &[])
        .expect("create");
    Target::Pg(format!("{}/{name}", url.rsplit_once('/').expect("db").0))
}

/// `users` users with a large balance, and `sessions` active sessions spread over them, in SQL.
fn seed(w: &mut Worker, users: i64, sessions: i64) {
    let db = w.db();
    db.begin().expect("begin");
    let series = |n: i64| -> Vec<Vec<quota_host::SqlCell>> { (0..n).map(|i| vec![i.into()]).collect() };
    let user = "INSERT INTO users (username, balance, unlimited, updated_at) VALUES ('u' || ?1, 1000000000, 0, 1795000000)";
    let session = "INSERT INTO sessions (username, server_name, resource_type, rate_milli, runtime_minutes,
        estimated_cost_milli, start_time, billable, status, cost) VALUES ('u' || (?1 % ?2), 's' || ?1, 'cpu', 1000, 60, 60000, 1795000000, 1, 'active', 0)";
    let (user, session) = match db.dialect() {
        quota_host::Dialect::Sqlite => (user.to_string(), session.to_string()),
        quota_host::Dialect::Postgres => (
            user.replace("?1", "$1::bigint"),
            session.replace("?1", "$1::bigint").replace("?2", "$2::bigint"),
        ),
    };
    db.execute_many(&user, &series(users)).expect("users");
    let rows: Vec<Vec<quota_host::SqlCell>> = (0..sessions).map(|i| vec![i.into(), users.into()]).collect();
    db.execute_many(&session, &rows).expect("sessions");
    db.commit().expect("commit");
}

fn session_ends(rt: &Arc<Runtime>, target: &Target) {
    let mut w = Worker::new(rt.clone(), target.open(), &values()).expect("worker");
    seed(&mut w, 4_000, SESSIONS);
    let ids: Vec<i64> = (1..=SESSIONS).collect();
    let t = Instant::now();
    let handles: Vec<_> = (0..WRITERS)
        .map(|k| {
            let (rt, target) = (rt.clone(), target.clone());
            let mine: Vec<i64> = ids
                .iter()
                .copied()
                .filter(|id| *id as usize % WRITERS == k)
                .collect();
            std::thread::spawn(move || {
                let mut w = Worker::new(rt, target.open(), &values()).expect("worker");
                let now = Timestamp(T0 + 600);
                for id in mine {
                    let r = w.end_session(
                        &EndRequest {
                            target: EndTarget::Id(id),
                            ended_at: None,
                            outcome: Outcome::Completed,
                        },
                        now,
                    );
                    r.expect("end");
                }
                w.conflicts_retried
            })
        })
        .collect();
    let retried: u64 = handles.into_iter().map(|h| h.join().expect("writer")).sum();
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{:>10}: {SESSIONS} session ends by {WRITERS} writers in {secs:.2} s = {:.0} durable ends/s ({retried} conflict retries)",
        target.name(),
        SESSIONS as f64 / secs
    );
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p) as usize]
}

/// One refresh of every user: one transaction (no run id), or chunks of `refresh_chunk_users`, one
/// transaction each (with a run id), timing each chunk's transaction from its start to the next's
/// (commit included: an upper bound on how long it held its row locks).
fn refresh(rt: &Arc<Runtime>, target: &Target, users: i64, chunked: bool) {
    let mut w = Worker::new(rt.clone(), target.open(), &values()).expect("worker");
    if !chunked {
        seed(&mut w, users, 0);
    }
    // The gate from another connection while the refresh runs.
    let stop = Arc::new(AtomicBool::new(false));
    // Opened (and migrated) before the refresh takes its locks.
    let mut g = Worker::new(rt.clone(), target.open(), &values()).expect("gate");
    let gate = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut lat = Vec::new();
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let body = format!(
                    r#"{{"username": "u{}", "runtime_minutes": 5, "server_name": "g{}-{i}"}}"#,
                    (i * 7919) % users,
                    u8::from(chunked)
                );
                let caller = quota_core::Caller {
                    name: "hub".into(),
                    admin: false,
                    scopes: vec!["quota:sessions".into()],
                };
                let req = quota_core::Request {
                    method: "POST",
                    path: "/api/quota/sessions",
                    query: "",
                    body: &body,
                    caller: Some(&caller),
                };
                let t = Instant::now();
                let r = g.handle_request(&req, Timestamp(T0 + 60));
                lat.push(t.elapsed().as_secs_f64() * 1000.0);
                if let Ok(r) = r {
                    assert!(r.status == 201 || r.status == 503, "{}", r.body);
                }
                i += 1;
            }
            lat
        })
    };
    let t = Instant::now();
    let mut chunk_starts = Vec::new();
    let r = if chunked {
        let admin = quota_core::Caller {
            name: "admin".into(),
            admin: true,
            scopes: vec![],
        };
        let body = format!(r#"{{"action": "add", "amount": 1, "run_id": "bench-{users}"}}"#);
        let req = quota_core::Request {
            method: "POST",
            path: "/admin/api/quota/refresh",
            query: "",
            body: &body,
            caller: Some(&admin),
        };
        let answer = w
            .chunked(|tx, chunk| {
                chunk_starts.push(Instant::now());
                tx.handle_request_step(&req, Timestamp(T0 + 180), chunk)
            })
            .expect("refresh");
        assert_eq!(answer.status, 200, "{}", answer.body);
        serde_json::from_str::<serde_json::Value>(&answer.body).expect("json")["users_updated"]
            .as_u64()
            .expect("users_updated")
    } else {
        w.refresh(r#"{"action": "add", "amount": 1}"#, Timestamp(T0 + 120))
            .expect("refresh")
            .users_updated
    };
    let secs = t.elapsed().as_secs_f64();
    chunk_starts.push(Instant::now());
    stop.store(true, Ordering::Relaxed);
    let mut lat = gate.join().expect("gate");
    let (p50, p99) = if lat.is_empty() {
        (0.0, 0.0)
    } else {
        (percentile(&mut lat, 0.5), percentile(&mut lat, 0.99))
    };
    let how = if chunked {
        let mut held: Vec<f64> = chunk_starts
            .windows(2)
            .map(|w| (w[1] - w[0]).as_secs_f64() * 1000.0)
            .collect();
        let n = held.len();
        let max = held.iter().copied().fold(0.0, f64::max);
        format!(
            "{n} transactions of {} users, each {:.1} ms at p99, {max:.1} ms at most",
            runtime()
                .bounds(quota_host::Dialect::Postgres)
                .refresh_chunk_users,
            percentile(&mut held, 0.99)
        )
    } else {
        "one transaction".to_string()
    };
    println!(
        "{:>10}: refresh of {users} users ({r} updated) in {secs:.2} s, {how}; gate during it: {} calls, p50 {p50:.1} ms, p99 {p99:.1} ms ({} conflict retries)",
        target.name(),
        lat.len(),
        w.conflicts_retried
    );
}

/// The sweep over `users` users holding one grant each, half of them due: every call of the
/// route in chunks (`{"in_chunks": true}`), each its own transaction. Prints the whole time, the
/// chunks and the longest one (the longest any writer could wait behind the sweep).
fn sweep(rt: &Arc<Runtime>, target: &Target, users: i64) {
    let mut w = Worker::new(rt.clone(), target.open(), &values()).expect("worker");
    {
        let db = w.db();
        db.begin().expect("begin");
        let user = "INSERT INTO users (username, balance, unlimited, updated_at) VALUES ('u' || ?1, 100, 0, 1795000000)";
        let grant = "INSERT INTO grants (username, budget, amount, remaining, granted_at, expires_at)
            VALUES ('u' || ?1, '', 100, 100, 1795000000, 1795000000 + 60 + (?1 % 2) * 2592000)";
        let (user, grant) = match db.dialect() {
            quota_host::Dialect::Sqlite => (user.to_string(), grant.to_string()),
            quota_host::Dialect::Postgres => (
                user.replace("?1", "$1::bigint"),
                grant.replace("?1", "$1::bigint"),
            ),
        };
        let series: Vec<Vec<quota_host::SqlCell>> = (0..users).map(|i| vec![i.into()]).collect();
        db.execute_many(&user, &series).expect("users");
        db.execute_many(&grant, &series).expect("grants");
        db.commit().expect("commit");
    }
    let caller = quota_core::Caller {
        name: "bench".into(),
        admin: false,
        scopes: vec!["quota:refresh".into()],
    };
    let req = quota_core::Request {
        method: "POST",
        path: "/admin/api/quota/expire",
        query: "",
        body: r#"{"in_chunks": true}"#,
        caller: Some(&caller),
    };
    let now = Timestamp(T0 + 3600);
    let (mut chunks, mut longest, mut expired) = (0, 0f64, 0u64);
    let t = Instant::now();
    loop {
        let c = Instant::now();
        let r = w.handle_request(&req, now).expect("sweep");
        longest = longest.max(c.elapsed().as_secs_f64());
        chunks += 1;
        assert_eq!(r.status, 200, "{}", r.body);
        let v: serde_json::Value = serde_json::from_str(&r.body).expect("JSON");
        expired += v["grants_expired"].as_u64().unwrap_or(0);
        if v["more"] != true {
            break;
        }
    }
    println!(
        "  {}: {expired} grants written off in {:.3} s, {chunks} chunks, the longest {:.0} ms",
        target.name(),
        t.elapsed().as_secs_f64(),
        longest * 1000.0
    );
}

fn engine_sections(rt: &Arc<Runtime>, dir: &std::path::Path) {
    println!("1. durable session ends, {WRITERS} concurrent writers");
    session_ends(rt, &Target::Sqlite(dir.join("ends.db")));
    session_ends(rt, &pg_database("bench_ends"));
    let mut sizes = vec![100_000];
    if std::env::var("BENCH_MILLION").is_ok() {
        sizes.push(1_000_000);
    }
    for n in sizes {
        println!("2. refresh of {n} users: one transaction, then in chunks (a run id)");
        for target in [
            Target::Sqlite(dir.join(format!("refresh{n}.db"))),
            pg_database(&format!("bench_refresh_{n}")),
        ] {
            refresh(rt, &target, n, false);
            refresh(rt, &target, n, true);
        }
    }
}

fn main() {
    let _rt = runtime();
    let dir = tempfile::tempdir().expect("dir");
    println!("4. the sweep of 100,000 users with one grant each, half of them due, in chunks");
    sweep(&runtime(), &Target::Sqlite(dir.path().join("sweep.db")), 100_000);
    sweep(&runtime(), &pg_database("bench_sweep"), 100_000);
    if std::env::var("BENCH_SWEEP_ONLY").is_ok() {
        return;
    }
    if std::env::var("BENCH_ISOLATION_ONLY").is_err() {
        engine_sections(&runtime(), dir.path());
    }
    println!("3. isolation on PostgreSQL: the session end's statements in raw SQL, {WRITERS} writers");
    let Target::Pg(url) = pg_database("bench_isolation") else {
        unreachable!("a PostgreSQL target")
    };
    for users in [4_000, 8] {
        let (s, s_retries) = isolation(&url, users, true);
        let (r, _) = isolation(&url, users, false);
        println!(
            "  over {users:>5} users: SERIALIZABLE {s:.0} ends/s ({s_retries} retries), READ COMMITTED + FOR UPDATE {r:.0} ends/s; ratio {:.2}",
            s / r
        );
    }
}
