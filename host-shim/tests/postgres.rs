//! The component over PostgreSQL (`pg::PgDb`), against a real server: `scripts/with-postgres.sh`
//! starts one and sets `QUOTA_TEST_PG_URL`. Every scenario gives exactly the native core's
//! transcript; a fresh database migrates once and a second host finds it current; concurrent
//! writers keep every balance equal to the sum of its ledger.
#![cfg(feature = "postgres")]

mod common;

use quota_host::pg::PgDb;
use quota_host::{Database, SqlValue, Worker};

fn server_url() -> String {
    std::env::var("QUOTA_TEST_PG_URL").unwrap_or_else(|_| {
        panic!("QUOTA_TEST_PG_URL is not set: run these tests through scripts/with-postgres.sh")
    })
}

/// A new, empty database on the test server; its URL.
fn fresh_database(name: &str) -> String {
    let url = server_url();
    let mut admin = PgDb::connect(&url).expect("connect");
    // Each its own statement: neither may run inside a transaction block.
    admin
        .batch(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .expect("drop database");
    admin
        .batch(&format!("CREATE DATABASE {name}"))
        .expect("create database");
    let (base, _) = url.rsplit_once('/').expect("url has a database");
    format!("{base}/{name}")
}

#[test]
fn component_over_postgres_matches_the_native_core_byte_for_byte() {
    let mut n = 0;
    let fresh = Box::new(move || -> Box<dyn Database> {
        n += 1;
        Box::new(PgDb::connect(&fresh_database(&format!("scenario_{n}"))).expect("connect"))
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
                let db = PgDb::connect(&url).map_err(|e| e.to_string())?;
                Worker::new(common::runtime(), Box::new(db), &common::fixture_json())
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            })
        })
        .collect();
    for h in hosts {
        h.join().expect("thread").expect("host came up");
    }
    let mut db = PgDb::connect(&url).expect("connect");
    let version = db
        .query("SELECT obj_description(to_regclass('users'), 'pg_class')", &[])
        .expect("version");
    assert_eq!(
        version,
        vec![vec![SqlValue::Text("quota-engine schema 3".into())]]
    );
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
                let db = PgDb::connect(&url).expect("connect");
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
    let mut db = PgDb::connect(&url).expect("connect");
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
    assert_eq!(n, vec![vec![SqlValue::Int(threads as i64 * rounds as i64)]]);
    println!("{threads} writers x {rounds} adds on {users} users: ledger exact, {retried} conflict retries");
}
