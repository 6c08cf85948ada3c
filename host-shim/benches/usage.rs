//! What a user's history and the usage reports cost, through the component (issue 26's measures):
//!
//! 1. `GET /api/quota/me` with its forecast, 50 refresh rules and 100,000 users: p50 and p99 of
//!    10,000 requests for random users (SQLite file).
//! 2. The usage report over a ledger of 10 million `usage` rows (and as many completed sessions)
//!    spread over 365 days, 10,000 users and 3 resource types: the running sums written from them,
//!    then `group_by=day` for 30 days, the top users of those
//!    days, a page by user, and one user's own 30 days. SQLite, and PostgreSQL when
//!    `QUOTA_TEST_PG_URL` is set (`scripts/with-postgres.sh`).
//!
//!   bash scripts/build-wasm.sh && bash scripts/with-postgres.sh \
//!     cargo bench -p quota-host --features postgres --bench usage
//!
//! `QUOTA_BENCH_ROWS` changes the ledger's size (default 10,000,000); `QUOTA_BENCH_COMPONENT`
//! benches another build of the component. Prints figures; asserts nothing about time.

use std::sync::Arc;
use std::time::Instant;

use quota_core::{Caller, Request, Timestamp};
use quota_host::pg::PgDb;
use quota_host::{Database, Dialect, Runtime, SqliteDb, SqliteOptions, Worker};

const DAY: i64 = 86_400;
/// 2026-11-26T00:00:00Z: the last day of the ledger.
const LAST_DAY: i64 = 20_783;
const USERS: i64 = 10_000;

#[path = "support/mod.rs"]
mod support;
use support::runtime;

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 * p) as usize).min(v.len() - 1)]
}

fn get(w: &mut Worker, caller: &Caller, path: &str, now: Timestamp) -> (f64, String) {
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    let req = Request {
        method: "GET",
        path,
        query,
        body: "",
        caller: Some(caller),
    };
    let t = Instant::now();
    let r = w.handle_request(&req, now).expect("request");
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(r.status, 200, "{path}?{query}: {}", r.body);
    (ms, r.body)
}

fn admin() -> Caller {
    Caller {
        name: "admin".into(),
        admin: true,
        scopes: Vec::new(),
    }
}

/// 50 rules: weekly and daily top-ups with caps, by balance, pattern and group, some `set`.
fn forecast_values() -> String {
    let rules: serde_json::Map<String, serde_json::Value> = (0..50)
        .map(|k| {
            let targets = match k % 5 {
                0 => serde_json::json!({}),
                1 => serde_json::json!({"balanceBelow": 50 + k}),
                2 => serde_json::json!({"usernamePattern": format!("u0{}", k % 10)}),
                3 => serde_json::json!({"includeGroups": [format!("g{}", k % 7)]}),
                _ => serde_json::json!({"balanceAbove": 10, "excludeUsers": ["u000001"]}),
            };
            let rule = serde_json::json!({
                "enabled": k % 10 != 9,
                "schedule": format!("{} {} * * {}", k % 60, k % 24, k % 7),
                "action": if k % 4 == 0 { "set" } else { "add" },
                "amount": 10 + k,
                "maxBalance": 500,
                "targets": targets,
            });
            (format!("rule-{k:02}"), rule)
        })
        .collect();
    serde_json::json!({"custom": {"authMode": "github",
        "quota": {"refreshRules": rules},
        "accelerators": {"gpu": {"quotaRate": 3}, "big": {"quotaRate": 12.5}}}})
    .to_string()
}

fn me_forecast(rt: &Arc<Runtime>, dir: &std::path::Path) {
    let path = dir.join("me.db");
    let db = SqliteDb::open(rt, &path, SqliteOptions::default()).unwrap();
    let mut w = Worker::new(rt.clone(), Box::new(db), &forecast_values()).unwrap();
    let users = 100_000;
    let rows: Vec<Vec<quota_host::SqlCell>> = (0..users)
        .map(|i| {
            vec![
                format!("u{i:06}").as_str().into(),
                quota_host::SqlCell::Int(i % 300),
            ]
        })
        .collect();
    w.db().begin().unwrap();
    w.db()
        .execute_many(
            "INSERT INTO users (username, balance, unlimited, updated_at) VALUES (?1, ?2, 0, 0)",
            &rows,
        )
        .unwrap();
    w.db().commit().unwrap();
    let members: Vec<(String, Vec<String>)> = (0..users)
        .filter(|i| i % 3 == 0)
        .map(|i| (format!("u{i:06}"), vec![format!("g{}", i % 7)]))
        .collect();
    w.replace_memberships(&members, true, Timestamp(LAST_DAY * DAY))
        .unwrap();
    let now = Timestamp(LAST_DAY * DAY + 3600);
    let mut times = Vec::new();
    let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
    for _ in 0..10_000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let caller = Caller {
            name: format!("u{:06}", seed % users as u64),
            admin: false,
            scopes: Vec::new(),
        };
        times.push(get(&mut w, &caller, "/api/quota/me", now).0);
    }
    let (_, body) = get(
        &mut w,
        &Caller {
            name: "u000003".into(),
            admin: false,
            scopes: vec![],
        },
        "/api/quota/me",
        now,
    );
    println!(
        "GET /api/quota/me with the forecast (50 rules, {users} users, SQLite file): p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms over 10,000 requests",
        percentile(&mut times, 0.5),
        percentile(&mut times, 0.99),
        percentile(&mut times, 1.0),
    );
    println!("  e.g. {body}");
}

/// The ledger: `rows` usage transactions and as many completed sessions, row i for user i % 10,000
/// on day LAST_DAY - (i % 365), resource i % 3, 1 to 60 minutes at 1, 3 or 12 credits a minute.
fn seed_ledger(db: &mut dyn Database, rows: i64) {
    let series = match db.dialect() {
        Dialect::Sqlite => {
            format!("WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i + 1 < {rows}) SELECT i FROM s")
        }
        Dialect::Postgres => format!("SELECT i FROM generate_series(0, {rows} - 1) AS g(i)"),
    };
    let cols = format!(
        "i % {USERS} AS u, ({LAST_DAY} - i % 365) * {DAY} + (i % 86000) AS t, i % 3 AS r, 1 + i % 60 AS m"
    );
    let user = "'user' || (u + 100000)";
    let resource = "CASE r WHEN 0 THEN 'cpu' WHEN 1 THEN 'gpu' ELSE 'big' END";
    let rate = "CASE r WHEN 0 THEN 1 WHEN 1 THEN 3 ELSE 12 END";
    db.begin().unwrap();
    db.query(
        &format!(
            "INSERT INTO transactions (username, amount, transaction_type, resource_type, description,
             balance_before, balance_after, created_at, created_by)
             SELECT {user}, -m * {rate}, 'usage', {resource}, 'Session', 0, -m * {rate}, t, NULL
             FROM (SELECT {cols} FROM ({series}) AS s) AS x"
        ),
        &[],
    )
    .unwrap();
    db.query(
        &format!(
            "INSERT INTO sessions (username, server_name, resource_type, rate_milli, runtime_minutes,
             estimated_cost_milli, start_time, billable, status, end_time, duration_minutes, cost)
             SELECT {user}, '', {resource}, {rate} * 1000, 60, {rate} * 60000, t - m * 60, 1, 'completed',
             t, m, m * {rate}
             FROM (SELECT {cols} FROM ({series}) AS s) AS x"
        ),
        &[],
    )
    .unwrap();
    db.commit().unwrap();
}

fn reports(name: &str, rt: &Arc<Runtime>, db: Box<dyn Database>, rows: i64) {
    let values = serde_json::json!({"custom": {"authMode": "github"}}).to_string();
    let mut w = Worker::new(rt.clone(), db, &values).unwrap();
    let t = Instant::now();
    seed_ledger(w.db(), rows);
    eprintln!(
        "{name}: seeded {rows} usage rows and sessions in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    // The sums as the engine keeps them (it writes them at each session's end; the seed wrote the
    // sessions directly), and a user row for each user of the ledger. Schema 6 added columns, so a
    // database can no longer pass for schema 4 to time the migration that builds the sums (17.2 s
    // over 10,000,000 rows on SQLite when it could: docs/status.md).
    let t = Instant::now();
    w.db().begin().unwrap();
    for q in [
        "INSERT INTO usage_days (day, resource_type, credits, minutes, sessions)
         SELECT end_time / 86400, resource_type, SUM(cost), SUM(duration_minutes), COUNT(*)
         FROM sessions WHERE status = 'completed' GROUP BY end_time / 86400, resource_type",
        "INSERT INTO user_usage_days (username, day, resource_type, credits, minutes, sessions)
         SELECT username, end_time / 86400, resource_type, SUM(cost), SUM(duration_minutes), COUNT(*)
         FROM sessions WHERE status = 'completed' GROUP BY username, end_time / 86400, resource_type",
        "INSERT INTO users (username, balance, unlimited, updated_at)
         SELECT DISTINCT username, 0, 0, 0 FROM sessions
         WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.username = sessions.username)",
    ] {
        w.db().query(q, &[]).unwrap();
    }
    w.db().commit().unwrap();
    println!(
        "{name}: the sums of {rows} sessions written in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    if let Dialect::Postgres = w.db().dialect() {
        w.db().query("ANALYZE", &[]).unwrap();
    }
    let now = Timestamp(LAST_DAY * DAY + 3600);
    let from = "2026-10-28";
    let to = "2026-11-26";
    let admin = admin();
    for (what, path) in [
        (
            "by day, 30 days",
            format!("/admin/api/quota/usage?from={from}&to={to}&group_by=day"),
        ),
        (
            "by resource, 30 days",
            format!("/admin/api/quota/usage?from={from}&to={to}&group_by=resource"),
        ),
        (
            "top 10 users, 30 days",
            format!("/admin/api/quota/usage?from={from}&to={to}&group_by=user&order=credits&limit=10"),
        ),
        (
            "a page of 1,000 users, 30 days",
            format!("/admin/api/quota/usage?from={from}&to={to}&group_by=user"),
        ),
        (
            "by day, 366 days",
            "/admin/api/quota/usage?from=2025-11-26&to=2026-11-26&group_by=day".to_string(),
        ),
    ] {
        let mut times: Vec<f64> = Vec::new();
        let mut body = String::new();
        for _ in 0..20 {
            let (ms, b) = get(&mut w, &admin, &path, now);
            times.push(ms);
            body = b;
        }
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        println!(
            "{name}: usage report {what}: median {:.1} ms, max {:.1} ms ({} rows, {} credits)",
            percentile(&mut times, 0.5),
            percentile(&mut times, 1.0),
            v["rows"].as_array().map_or(0, Vec::len),
            v["totals"]["credits"]
        );
    }
    let user = Caller {
        name: "user100042".into(),
        admin: false,
        scopes: Vec::new(),
    };
    let mut times: Vec<f64> = (0..20)
        .map(|_| get(&mut w, &user, "/api/quota/me/usage", now).0)
        .collect();
    println!(
        "{name}: a user's own 30 days (/api/quota/me/usage): median {:.2} ms",
        percentile(&mut times, 0.5)
    );
}

fn main() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    me_forecast(&rt, dir.path());
    let rows: i64 = std::env::var("QUOTA_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let db = SqliteDb::open(&rt, &dir.path().join("usage.db"), SqliteOptions::default()).unwrap();
    reports("SQLite", &rt, Box::new(db), rows);
    match std::env::var("QUOTA_TEST_PG_URL") {
        Ok(url) => {
            let db = PgDb::connect(&rt, &url).unwrap();
            reports("PostgreSQL", &rt, Box::new(db), rows);
        }
        Err(_) => eprintln!(
            "PostgreSQL: skipped (QUOTA_TEST_PG_URL is not set: run through scripts/with-postgres.sh)"
        ),
    }
}
