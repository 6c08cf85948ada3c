//! PostgreSQL beside SQLite, in one run (a real server from `scripts/with-postgres.sh`):
//!
//! 1. Durable session ends per second with 8 concurrent writers (each its own connection and
//!    engine instance; every end one committed transaction), and the conflict retries they needed.
//! 2. One refresh of 100,000 users (and of 1,000,000 with `BENCH_MILLION=1`), with the spawn gate's
//!    latency (p50, p99) measured from another connection while the refresh runs.
//!
//!   bash scripts/build-wasm.sh && bash scripts/with-postgres.sh \
//!     cargo bench -p quota-host --features postgres --bench postgres
//!
//! Prints figures; asserts nothing about time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use quota_core::sessions::{EndRequest, EndTarget, Outcome};
use quota_core::Timestamp;
use quota_host::pg::PgDb;
use quota_host::{Database, Durability, Limits, Runtime, SqliteDb, Worker};

const WRITERS: usize = 8;
const SESSIONS: i64 = 16_000;
const T0: i64 = 1_795_000_000;

fn values() -> String {
    serde_json::json!({"custom": {"authMode": "github", "quota": {"cpuRate": 1, "minimumToStart": 1, "defaultQuota": 0}}})
        .to_string()
}

fn runtime() -> Arc<Runtime> {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/wasm/quota-engine.wasm");
    Runtime::load(&path, Limits::default()).expect("component (bash scripts/build-wasm.sh)")
}

#[derive(Clone)]
enum Target {
    Pg(String),
    Sqlite(std::path::PathBuf),
}

impl Target {
    fn open(&self) -> Box<dyn Database> {
        match self {
            Target::Pg(url) => Box::new(PgDb::connect(url).expect("connect")),
            Target::Sqlite(p) => Box::new(SqliteDb::open(p, Durability::Full).expect("open")),
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
    let mut admin = PgDb::connect(&url).expect("connect");
    admin
        .batch(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .expect("drop");
    admin.batch(&format!("CREATE DATABASE {name}")).expect("create");
    Target::Pg(format!("{}/{name}", url.rsplit_once('/').expect("db").0))
}

/// `users` users with a large balance, and `sessions` active sessions spread over them, in SQL.
fn seed(w: &mut Worker, users: i64, sessions: i64) {
    let db = w.db();
    db.begin().expect("begin");
    let series = |n: i64| -> Vec<Vec<quota_host::SqlValue>> { (0..n).map(|i| vec![i.into()]).collect() };
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
    let rows: Vec<Vec<quota_host::SqlValue>> = (0..sessions).map(|i| vec![i.into(), users.into()]).collect();
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

fn refresh(rt: &Arc<Runtime>, target: &Target, users: i64) {
    let mut w = Worker::new(rt.clone(), target.open(), &values()).expect("worker");
    seed(&mut w, users, 0);
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
                    r#"{{"username": "u{}", "runtime_minutes": 5, "server_name": "g{i}"}}"#,
                    (i * 7919) % users
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
    let r = w
        .refresh(r#"{"action": "add", "amount": 1}"#, Timestamp(T0 + 120))
        .expect("refresh");
    let secs = t.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let mut lat = gate.join().expect("gate");
    let (p50, p99) = if lat.is_empty() {
        (0.0, 0.0)
    } else {
        (percentile(&mut lat, 0.5), percentile(&mut lat, 0.99))
    };
    println!(
        "{:>10}: refresh of {users} users ({} updated) in {secs:.2} s, one transaction; gate during it: {} calls, p50 {p50:.1} ms, p99 {p99:.1} ms",
        target.name(),
        r.users_updated,
        lat.len()
    );
}

fn main() {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("dir");
    println!("1. durable session ends, {WRITERS} concurrent writers");
    session_ends(&rt, &Target::Sqlite(dir.path().join("ends.db")));
    session_ends(&rt, &pg_database("bench_ends"));
    let mut sizes = vec![100_000];
    if std::env::var("BENCH_MILLION").is_ok() {
        sizes.push(1_000_000);
    }
    for n in sizes {
        println!("2. refresh of {n} users");
        refresh(&rt, &Target::Sqlite(dir.path().join(format!("refresh{n}.db"))), n);
        refresh(&rt, &pg_database(&format!("bench_refresh_{n}")), n);
    }
}
