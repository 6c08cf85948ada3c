//! Host-side rows: tokens, Idempotency-Key replays (atomic with the engine call), and the
//! migration that adds them to a version-1 database.

mod common;

use quota_core::Timestamp;
use quota_host::{
    Backend, Durability, HostTables, IdempotencyKey, MemBackend, SqliteBackend, TokenRecord, Worker,
};

fn token(hash: &str) -> TokenRecord {
    TokenRecord {
        hash: hash.into(),
        name: "hub".into(),
        admin: false,
        scopes: vec!["quota:sessions".into(), "quota:refresh".into()],
        created_at: Timestamp(7),
    }
}

fn key(k: &str) -> IdempotencyKey {
    IdempotencyKey {
        caller: "admin".into(),
        method: "POST".into(),
        path: "/admin/api/quota/alice".into(),
        key: k.into(),
    }
}

#[test]
fn tokens_round_trip_on_both_backends() {
    let dir = tempfile::tempdir().expect("dir");
    let backends: Vec<Box<dyn Backend>> = vec![
        Box::new(MemBackend::new()),
        Box::new(SqliteBackend::open(&dir.path().join("t.db"), Durability::Full).expect("open")),
    ];
    for mut b in backends {
        b.put_token(&token("abc")).expect("put");
        assert_eq!(b.find_token("abc").expect("find"), Some(token("abc")));
        assert_eq!(b.find_token("abd").expect("find"), None);
    }
}

fn post(w: &mut Worker, body: &str, once: Option<(&IdempotencyKey, &str)>) -> (u16, String) {
    let admin = common::admin();
    let req = quota_core::Request {
        method: "POST",
        path: "/admin/api/quota/alice",
        query: "",
        body,
        caller: Some(&admin),
    };
    let r = w
        .handle_request_once(&req, Timestamp(1_795_000_000), once)
        .expect("call");
    (r.status, r.body)
}

#[test]
fn a_repeated_key_replays_without_applying_and_another_body_conflicts() {
    let dir = tempfile::tempdir().expect("dir");
    let b = SqliteBackend::open(&dir.path().join("i.db"), Durability::Full).expect("open");
    let mut w = Worker::new(common::runtime(), Box::new(b), &common::fixture_json()).expect("worker");
    let add = r#"{"action":"add","amount":5}"#;
    let k = key("k1");
    let first = post(&mut w, add, Some((&k, "h1")));
    assert_eq!(first.0, 200, "{}", first.1);
    let again = post(&mut w, add, Some((&k, "h1")));
    assert_eq!(again, first, "the first response is replayed");
    let other = post(&mut w, r#"{"action":"add","amount":6}"#, Some((&k, "h2")));
    assert_eq!(other.0, 409, "{}", other.1);
    assert!(other.1.contains("Idempotency-Key"), "{}", other.1);
    // Applied exactly once: balance 5, one transaction.
    let dump = w.backend().dump().expect("dump");
    assert_eq!(
        dump.lines().filter(|l| l.starts_with("transactions|")).count(),
        1,
        "{dump}"
    );
    assert!(dump.contains("users|Text(\"alice\")|Integer(5)|"), "{dump}");
    // A refused request is replayed too (whatever its status), and another key applies again.
    let bad = post(&mut w, r#"{"action":"add"}"#, Some((&key("k2"), "h3")));
    assert_eq!(bad.0, 400);
    assert_eq!(post(&mut w, r#"{"action":"add"}"#, Some((&key("k2"), "h3"))), bad);
    assert_eq!(post(&mut w, add, Some((&key("k3"), "h1"))).0, 200);
    assert!(w.backend().dump().expect("dump").contains("Integer(10)"));
}

#[test]
fn a_version_one_database_gains_the_host_tables_and_keeps_its_rows() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("v1.db");
    {
        let b = SqliteBackend::open(&path, Durability::Full).expect("open");
        b.connection()
            .execute_batch(
                "DROP TABLE api_tokens; DROP TABLE idempotency; PRAGMA user_version = 1;
                 INSERT INTO users VALUES ('alice', 42, 0, 1);",
            )
            .expect("downgrade");
    }
    let mut b = SqliteBackend::open(&path, Durability::Full).expect("reopen");
    assert_eq!(b.schema_version().expect("version"), 2);
    b.put_token(&token("x")).expect("token table exists");
    assert!(b.dump().expect("dump").contains("Integer(42)"));
}
