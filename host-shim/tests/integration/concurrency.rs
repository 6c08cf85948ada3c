//! 8 threads x 500 start/stop pairs on one SQLite file over a few shared users, each thread with its
//! own worker and connection: balances equal the sum of their transactions, each ended session has
//! exactly one usage transaction, and no error leaks.

use crate::common;

use std::collections::BTreeMap;

use quota_core::Timestamp;
use quota_host::{SqliteDb, SqliteOptions, Worker};

const THREADS: usize = 8;
const PAIRS: usize = 500;
const USERS: [&str; 3] = ["ann", "ben", "cy"];
const START_BALANCE: i64 = 1_000_000;

#[test]
fn eight_threads_of_start_stop_pairs_keep_the_ledger_exact() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("shared.db");
    let values = common::fixture_json();
    let now = Timestamp(1_795_000_000);
    {
        let db = SqliteDb::open(&common::runtime(), &db, SqliteOptions::default()).expect("db");
        let mut w = Worker::new(common::runtime(), Box::new(db), &values).expect("worker");
        for u in USERS {
            let body = format!(r#"{{"action":"set","amount":{START_BALANCE}}}"#);
            assert_eq!(
                common::request(
                    &mut w,
                    &common::admin(),
                    "POST",
                    &format!("/admin/api/quota/users/{u}"),
                    &body,
                    now
                )
                .0,
                200
            );
        }
    }
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (db, values) = (db.clone(), values.clone());
            std::thread::spawn(move || {
                let db = SqliteDb::open(&common::runtime(), &db, SqliteOptions::default()).expect("db");
                let mut w = Worker::new(common::runtime(), Box::new(db), &values).expect("worker");
                let mut ended = Vec::with_capacity(PAIRS);
                for i in 0..PAIRS {
                    let user = USERS[(t + i) % USERS.len()];
                    let start = format!(r#"{{"username":"{user}","resource_type":"phx","runtime_minutes":5,"server_name":"t{t}"}}"#);
                    let at = Timestamp(now.0 + (i as i64) * 600);
                    let (status, body) = common::request(&mut w, &common::hub(), "POST", "/api/quota/sessions", &start, at);
                    assert_eq!(status, 201, "{body}");
                    let id = body["session_id"].as_i64().expect("id");
                    let (status, body) =
                        common::request(&mut w, &common::hub(), "POST", &format!("/api/quota/sessions/{id}/end"), "{}", Timestamp(at.0 + 150));
                    assert_eq!((status, body["cost"].as_i64()), (200, Some(4)), "{body}");
                    ended.push(id);
                }
                ended
            })
        })
        .collect();
    let mut ended: Vec<i64> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("no thread panicked"))
        .collect();
    ended.sort_unstable();
    ended.dedup();
    assert_eq!(ended.len(), THREADS * PAIRS, "session ids are unique");

    let conn = rusqlite::Connection::open(&db).expect("db");
    let mut usage_per_session: BTreeMap<String, i64> = BTreeMap::new();
    let mut stmt = conn
        .prepare("SELECT description FROM transactions WHERE transaction_type = 'usage'")
        .expect("q");
    for d in stmt.query_map([], |r| r.get::<_, String>(0)).expect("rows") {
        let d = d.expect("row");
        *usage_per_session
            .entry(d.split(':').next().unwrap_or_default().to_string())
            .or_default() += 1;
    }
    assert_eq!(
        usage_per_session.len(),
        THREADS * PAIRS,
        "one usage transaction per ended session"
    );
    assert!(usage_per_session.values().all(|n| *n == 1));
    for id in &ended {
        assert!(
            usage_per_session.contains_key(&format!("Session {id}")),
            "session {id} was billed"
        );
    }
    let mut total = 0;
    for u in USERS {
        let balance: i64 = conn
            .query_row("SELECT balance FROM users WHERE username = ?1", [u], |r| r.get(0))
            .expect("user");
        let sum: i64 = conn
            .query_row(
                "SELECT SUM(amount) FROM transactions WHERE username = ?1",
                [u],
                |r| r.get(0),
            )
            .expect("sum");
        assert_eq!(balance, sum, "{u}: balance equals the sum of its transactions");
        total += START_BALANCE - balance;
    }
    assert_eq!(
        total,
        (THREADS * PAIRS) as i64 * 4,
        "every pair charged 2 min x 2/min = 4"
    );
    let active: i64 = conn
        .query_row("SELECT COUNT(*) FROM sessions WHERE status = 'active'", [], |r| {
            r.get(0)
        })
        .expect("n");
    assert_eq!(active, 0);
}
