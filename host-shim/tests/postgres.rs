//! The component over PostgreSQL (`pg::PgDb`), against a real server: `scripts/with-postgres.sh`
//! starts one and sets `QUOTA_TEST_PG_URL`. Every scenario gives exactly the native core's
//! transcript; a fresh database migrates once and a second host finds it current; concurrent
//! writers keep every balance equal to the sum of its ledger.
#![cfg(feature = "pg-tests")]

mod common;

use quota_host::pg::PgDb;
use quota_host::{Database, Durability, SqlCell, Worker};

fn server_url() -> String {
    std::env::var("QUOTA_TEST_PG_URL").unwrap_or_else(|_| {
        panic!("QUOTA_TEST_PG_URL is not set: run these tests through scripts/with-postgres.sh")
    })
}

/// A new, empty database on the test server; its URL.
fn fresh_database(name: &str) -> String {
    let url = server_url();
    let mut admin = PgDb::connect(&common::runtime(), &url).expect("connect");
    // Each its own statement: neither may run inside a transaction block.
    admin
        .query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"), &[])
        .expect("drop database");
    admin
        .query(&format!("CREATE DATABASE {name}"), &[])
        .expect("create database");
    let (base, _) = url.rsplit_once('/').expect("url has a database");
    format!("{base}/{name}")
}

#[test]
fn component_over_postgres_matches_the_native_core_byte_for_byte() {
    let mut n = 0;
    let fresh = Box::new(move || -> Box<dyn Database> {
        n += 1;
        Box::new(
            PgDb::connect(&common::runtime(), &fresh_database(&format!("scenario_{n}"))).expect("connect"),
        )
    });
    let (files, exchanges) = common::assert_every_scenario_matches_native(fresh, "PostgreSQL");
    println!("{files} scenarios, {exchanges} requests: component over PostgreSQL == native core");
}

#[test]
fn a_fresh_database_is_migrated_once_and_a_second_host_finds_it_current() {
    let url = fresh_database("migrate_once");
    let hosts: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || {
                let db = PgDb::connect(&common::runtime(), &url).map_err(|e| e.to_string())?;
                Worker::new(common::runtime(), Box::new(db), &common::fixture_json())
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            })
        })
        .collect();
    for h in hosts {
        h.join().expect("thread").expect("host came up");
    }
    let mut db = PgDb::connect(&common::runtime(), &url).expect("connect");
    let version = db
        .query("SELECT obj_description(to_regclass('users'), 'pg_class')", &[])
        .expect("version");
    assert_eq!(version, vec![vec![SqlCell::Text("quota-engine schema 9".into())]]);
    // A database of the previous release (schema 3: no memberships) gains the table.
    db.query("DROP TABLE memberships", &[]).expect("drop");
    db.query("DROP TABLE group_members", &[]).expect("drop");
    db.query("DROP TABLE usage_days", &[]).expect("drop");
    db.query("DROP TABLE user_usage_days", &[]).expect("drop");
    // With a charge in its ledger: schema 5's sums are built from it.
    db.query(
        "INSERT INTO transactions (username, amount, transaction_type, resource_type, description,
         balance_before, balance_after, created_at, created_by)
         VALUES ('ann', -30, 'usage', 'gpu', 'Session 1', 100, 70, 86400 * 3 + 5, NULL)",
        &[],
    )
    .expect("charge");
    db.query(
        "INSERT INTO sessions (username, server_name, resource_type, rate_milli, runtime_minutes,
         estimated_cost_milli, start_time, billable, status, end_time, duration_minutes, cost)
         VALUES ('ann', '', 'gpu', 3000, 60, 180000, 86400 * 3 - 600, 1, 'completed', 86400 * 3, 10, 30)",
        &[],
    )
    .expect("session");
    db.query("DROP TABLE quota_schema", &[]).expect("drop");
    db.query("COMMENT ON TABLE users IS 'quota-engine schema 3'", &[])
        .expect("version 3");
    let mut w =
        quota_host::Worker::new(common::runtime(), Box::new(db), &common::fixture_json()).expect("migrate");
    let version = w
        .db()
        .query("SELECT obj_description(to_regclass('users'), 'pg_class')", &[])
        .expect("version");
    // The floor stays 9 where the engines of schema 9 read their version; the version is quota_schema's.
    assert_eq!(version, vec![vec![SqlCell::Text("quota-engine schema 9".into())]]);
    let recorded = w
        .db()
        .query("SELECT version, floor FROM quota_schema ORDER BY version", &[])
        .expect("recorded");
    assert_eq!(
        recorded,
        vec![
            vec![SqlCell::Int(10), SqlCell::Int(9)],
            vec![SqlCell::Int(11), SqlCell::Int(9)],
            vec![SqlCell::Int(12), SqlCell::Int(9)]
        ]
    );
    // Schema 6 made the ledger's member index, schema 12 dropped it (issue 60).
    let member_index = w
        .db()
        .query(
            "SELECT COUNT(*) FROM pg_indexes WHERE indexname = 'transactions_by_budget_member'",
            &[],
        )
        .expect("index");
    assert_eq!(member_index, vec![vec![SqlCell::Int(0)]]);
    let members = w
        .db()
        .query("SELECT COUNT(*) FROM memberships", &[])
        .expect("table");
    assert_eq!(members, vec![vec![SqlCell::Int(0)]]);
    let sums = w
        .db()
        .query(
            "SELECT username, day, resource_type, credits, minutes, sessions FROM user_usage_days",
            &[],
        )
        .expect("sums");
    let want = |s: &str| SqlCell::Text(s.into());
    let row = vec![
        want("ann"),
        SqlCell::Int(3),
        want("gpu"),
        SqlCell::Int(30),
        SqlCell::Int(10),
        SqlCell::Int(1),
    ];
    assert_eq!(sums, vec![row]);
    let days = w
        .db()
        .query(
            "SELECT day, resource_type, credits, minutes, sessions FROM usage_days",
            &[],
        )
        .expect("sums");
    assert_eq!(days.len(), 1);
    assert_eq!(days[0][3], SqlCell::Int(10));
}

/// The budgets' running holds (schema 11) over PostgreSQL: its triggers keep them equal to the
/// sessions' sums after every step (`common::holds`), and a database of the previous schema with
/// sessions running on a budget gains them from those sessions.
#[test]
fn the_kept_holds_equal_the_sessions_sums_after_every_step() {
    let url = fresh_database("budget_holds");
    let db = PgDb::connect(&common::runtime(), &url).expect("connect");
    let mut w = Worker::new(common::runtime(), Box::new(db), &common::holds::values()).expect("worker");
    let now = quota_core::Timestamp(1_795_300_000);
    let ran = common::holds::run(&mut w, 11, 200, now);
    assert!(ran.started > 30 && ran.other_writer > 5, "{ran:?}");
    // Back to schema 10, a session started by the previous release, then the migration.
    for sql in [
        "DROP TRIGGER budget_holds_started ON sessions",
        "DROP TRIGGER budget_holds_changed ON sessions",
        "DROP TRIGGER budget_holds_deleted ON sessions",
        "DROP TABLE budget_holds",
        "DELETE FROM quota_schema WHERE version >= 11",
        "INSERT INTO sessions (username, server_name, resource_type, rate_milli, runtime_minutes,
         estimated_cost_milli, start_time, billable, status, cost, budget)
         VALUES ('ann', 'old', 'cpu', 1000, 45, 45000, 1795300000, 1, 'active', 0, 'course')",
    ] {
        w.db().query(sql, &[]).expect(sql);
    }
    let m = w.migrate().expect("migrate");
    assert_eq!((m.from_version, m.to_version), (10, 12));
    let (kept, summed) = common::holds::kept_and_summed(&mut w);
    assert!(
        kept.iter().any(|r| r[0] == SqlCell::Text("course".into())),
        "{kept:?}"
    );
    assert_eq!(kept, summed);
    common::holds::run(&mut w, 13, 100, now.plus_seconds(7200));
    // A drift no trigger prevented: the sweep's check finds it and sets it right.
    w.db()
        .query(
            "UPDATE budget_holds SET held = held + 7000 WHERE budget = 'course'",
            &[],
        )
        .expect("drift");
    let later = now.plus_seconds(7300);
    let (st, b) = common::request(
        &mut w,
        &common::admin(),
        "POST",
        "/admin/api/quota/expire",
        "{}",
        later,
    );
    assert_eq!(st, 200, "{b}");
    assert_eq!(b["holds_repaired"][0]["budget"], "course", "{b}");
    let (kept, summed) = common::holds::kept_and_summed(&mut w);
    assert_eq!(kept, summed);
}

/// The previous release writes a budget session before each statement of the schema 10 to 11
/// migration in turn, on a connection of its own (issue 59: in the rolling upgrade's rehearsal the
/// holds ended doubled or missing in 4 runs of 14). A write the migration's locks hold back is done
/// once it committed; whichever the statement, the totals must equal the sessions' sums.
#[test]
fn the_previous_releases_writes_at_each_step_of_the_migration_keep_the_holds_true() {
    use common::interleave::{Interleaved, OldRelease, OldWrite, Outcome};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    let now = quota_core::Timestamp(1_795_300_000);
    let mut statements = None;
    let mut k = 0;
    while statements.is_none_or(|n| k < n) {
        for write in [OldWrite::Start, OldWrite::End] {
            let url = fresh_database("holds_interleaved");
            let rt = common::runtime();
            let old = Arc::new(Mutex::new(OldRelease {
                db: Box::new(PgDb::connect(&rt, &url).expect("the previous release's connection")),
                no_wait: Some("SET lock_timeout = '1ms'"),
            }));
            let (armed, seen) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
            let outcome = Arc::new(Mutex::new(Outcome::NotYet));
            let db = Interleaved {
                inner: Box::new(PgDb::connect(&rt, &url).expect("connect")),
                armed: armed.clone(),
                seen: seen.clone(),
                at: k,
                write,
                old: old.clone(),
                outcome: outcome.clone(),
            };
            let mut w = Worker::new(rt.clone(), Box::new(db), &common::holds::values()).expect("worker");
            common::holds::run(&mut w, 3 + k as u64, 30, now);
            for sql in [
                "DROP TRIGGER budget_holds_started ON sessions",
                "DROP TRIGGER budget_holds_changed ON sessions",
                "DROP TRIGGER budget_holds_deleted ON sessions",
                "DROP TABLE budget_holds",
                "DELETE FROM quota_schema WHERE version >= 11",
            ] {
                w.db().query(sql, &[]).expect(sql);
            }
            armed.store(true, Ordering::SeqCst);
            let m = w.migrate().expect("migrate");
            armed.store(false, Ordering::SeqCst);
            assert_eq!((m.from_version, m.to_version), (10, 12));
            statements.get_or_insert(seen.load(Ordering::SeqCst));
            let o = Interleaved::finish(&old, &outcome, write);
            assert_ne!(o, Outcome::NotYet, "statement {k} ran");
            let (kept, summed) = common::holds::kept_and_summed(&mut w);
            assert_eq!(
                kept, summed,
                "{write:?} before statement {k} of the migration ({o:?})"
            );
        }
        k += 1;
    }
    assert!(statements.is_some_and(|n| n > 8), "{statements:?}");
}

#[test]
fn concurrent_writers_keep_every_balance_equal_to_its_ledger() {
    let url = fresh_database("concurrent");
    let users = 5;
    let threads = 8;
    let rounds = 40;
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let url = url.clone();
            std::thread::spawn(move || {
                let db = PgDb::connect(&common::runtime(), &url).expect("connect");
                let mut w =
                    Worker::new(common::runtime(), Box::new(db), &common::fixture_json()).expect("worker");
                let now = quota_core::Timestamp::parse("2026-11-24T12:00:00Z").expect("time");
                for r in 0..rounds {
                    let user = format!("u{}", (t + r) % users);
                    let body = format!(r#"{{"action": "add", "amount": {}}}"#, 1 + (r % 3));
                    let path = format!("/admin/api/quota/users/{user}");
                    let admin = common::admin();
                    let req = quota_core::Request {
                        method: "POST",
                        path: &path,
                        query: "",
                        body: &body,
                        caller: Some(&admin),
                    };
                    let resp = w
                        .handle_request(&req, now)
                        .expect("no raw database error reaches the caller");
                    assert_eq!(resp.status, 200, "{}", resp.body);
                }
                w.conflicts_retried
            })
        })
        .collect();
    let retried: u64 = handles.into_iter().map(|h| h.join().expect("thread")).sum();
    let mut db = PgDb::connect(&common::runtime(), &url).expect("connect");
    let wrong = db
        .query(
            "SELECT u.username FROM users u LEFT JOIN transactions t ON t.username = u.username
             GROUP BY u.username, u.balance HAVING u.balance <> COALESCE(SUM(t.amount), 0)",
            &[],
        )
        .expect("check");
    assert!(
        wrong.is_empty(),
        "balances that differ from their ledger: {wrong:?}"
    );
    let n = db.query("SELECT COUNT(*) FROM transactions", &[]).expect("count");
    assert_eq!(n, vec![vec![SqlCell::Int(threads as i64 * rounds as i64)]]);
    println!("{threads} writers x {rounds} adds on {users} users: ledger exact, {retried} conflict retries");
}

/// The same requests against SQLite and PostgreSQL; every answer byte for byte equal.
#[test]
fn a_refresh_of_hundreds_of_users_is_recorded_as_on_sqlite() {
    // Pages of a refresh go through PostgreSQL's set-based statements (64 rows and more): the same
    // balances, the same audit rows with ids in the same order as on SQLite.
    let dir = tempfile::tempdir().expect("dir");
    let sqlite = quota_host::SqliteDb::open(
        &common::runtime(),
        &dir.path().join("q.db"),
        quota_host::SqliteOptions {
            durability: Some(Durability::Normal),
            ..Default::default()
        },
    )
    .expect("sqlite");
    let pg = PgDb::connect(&common::runtime(), &fresh_database("set_based")).expect("connect");
    let mut hosts: Vec<Worker> = [Box::new(sqlite) as Box<dyn Database>, Box::new(pg)]
        .into_iter()
        .map(|db| Worker::new(common::runtime(), db, &common::fixture_json()).expect("worker"))
        .collect();
    let admin = common::admin();
    let now = quota_core::Timestamp::parse("2026-11-24T12:00:00Z").expect("time");
    let users: Vec<String> = (0..700)
        .map(|i| format!(r#"{{"username": "r{i:04}", "amount": {}}}"#, (i * 37) % 500))
        .collect();
    let mut requests = vec![
        ("POST", "/admin/api/quota/batch".to_string(), format!(r#"{{"users": [{}]}}"#, users[..400].join(","))),
        ("POST", "/admin/api/quota/batch".to_string(), format!(r#"{{"users": [{}]}}"#, users[400..].join(","))),
        ("POST", "/admin/api/quota/refresh".to_string(), r#"{"action": "add", "amount": 50, "max_balance": 400}"#.to_string()),
        ("POST", "/admin/api/quota/refresh".to_string(), r#"{"action": "add", "amount": -30, "min_balance": 10, "targets": {"usernamePattern": "r0[0-3]"}}"#.to_string()),
        ("GET", "/admin/api/quota/".to_string(), String::new()),
    ];
    for after in (0..3000).step_by(1000) {
        requests.push((
            "GET",
            format!("/admin/api/quota/transactions?after_id={after}&limit=1000"),
            String::new(),
        ));
    }
    for (method, target, body) in &requests {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let answers: Vec<(u16, String)> = hosts
            .iter_mut()
            .map(|w| {
                let req = quota_core::Request {
                    method,
                    path,
                    query,
                    body,
                    caller: Some(&admin),
                };
                let r = w.handle_request(&req, now).expect("answer");
                (r.status, r.body)
            })
            .collect();
        assert_eq!(answers[0].0, 200, "{target}: {}", answers[0].1);
        assert_eq!(
            answers[0], answers[1],
            "{method} {target}: SQLite and PostgreSQL differ"
        );
    }
}
