//! Bulk writes through the bridge: a refresh writes its audit rows in multi-row blocks plus a
//! remainder row by row; whatever the number of changes, the rows, their order and their ids are
//! exactly the native core's.

use crate::common;

use quota_core::engine_call::EngineCall;
use quota_core::memstore::MemStore;
use quota_core::store::UserRecord;
use quota_core::store::UserStore;
use quota_core::Timestamp;
use quota_host::{Limits, Runtime, SqlCell, SqliteDb, Worker};

const T0: Timestamp = Timestamp(1_795_000_000);
const BODY: &str = r#"{"action":"add","amount":10,"max_balance":400,"rule_name":"bulk"}"#;

fn users(n: usize) -> Vec<UserRecord> {
    (0..n)
        .map(|i| UserRecord {
            username: format!("u{i:05}"),
            // Every 7th user is at or over the cap and skipped: changes are not a multiple of anything.
            balance: if i % 7 == 3 { 450 } else { (i % 390) as i64 },
            unlimited: false,
            updated_at: Timestamp(0),
        })
        .collect()
}

/// (id, username, amount, before, after, description) of every audit row, by id.
type Row = (i64, String, i64, i64, i64, String);

fn native(n: usize) -> (Vec<Row>, Vec<UserRecord>) {
    let mut s = MemStore::default();
    for u in users(n) {
        s.put_user(&u).expect("seed");
    }
    let req = quota_core::api::refresh_request_from_json(BODY).expect("body");
    quota_core::refresh::refresh(
        &quota_core::Config::default(),
        &mut EngineCall::new(&mut s),
        &req,
        T0,
    )
    .expect("refresh");
    let rows = s
        .scan_transactions(&quota_core::store::LedgerPage {
            username: None,
            since: Timestamp(0),
            until: Timestamp(i64::MAX),
            after_id: 0,
            limit: usize::MAX,
            budget: None,
        })
        .expect("scan")
        .into_iter()
        .map(|t| {
            let (id, e) = t.into_parts();
            (
                id,
                e.username,
                e.amount,
                e.balance_before,
                e.balance_after,
                e.description,
            )
        })
        .collect();
    (rows, s.scan_users(None, usize::MAX).expect("users"))
}

fn seed(w: &mut Worker, n: usize) {
    let seed: Vec<Vec<SqlCell>> = users(n)
        .into_iter()
        .map(|u| vec![u.username.into(), u.balance.into(), 0.into(), 0.into()])
        .collect();
    w.db()
        .execute_many(
            "INSERT INTO users (username, balance, unlimited, updated_at) VALUES (?1, ?2, ?3, ?4)",
            &seed,
        )
        .expect("seed");
}

fn audit_rows(w: &mut Worker) -> Vec<Row> {
    let int = |v: &SqlCell| v.as_int().expect("integer");
    let text = |v: &SqlCell| v.as_text().expect("text").to_string();
    w.db()
        .query(
            "SELECT id, username, amount, balance_before, balance_after, description \
             FROM transactions ORDER BY id",
            &[],
        )
        .expect("rows")
        .iter()
        .map(|r| {
            (
                int(&r[0]),
                text(&r[1]),
                int(&r[2]),
                int(&r[3]),
                int(&r[4]),
                text(&r[5]),
            )
        })
        .collect()
}

fn component(n: usize) -> (Vec<Row>, Vec<UserRecord>, u64) {
    let mut w = Worker::new(
        common::runtime(),
        Box::new(SqliteDb::memory(&common::runtime()).expect("memory db")),
        &common::fixture_json(),
    )
    .expect("worker");
    seed(&mut w, n);
    let result = w.refresh(BODY, T0).expect("refresh");
    let rows = audit_rows(&mut w);
    let users = w.list_users(T0).expect("users");
    (rows, users, result.users_updated)
}

#[test]
fn audit_rows_of_any_count_match_the_native_core_row_for_row() {
    // Around the block size (16), and past one refresh page (1,000 users).
    for n in [0, 1, 15, 16, 17, 18, 19, 20, 37, 1_100] {
        let (want_rows, want_users) = native(n);
        let (rows, users, updated) = component(n);
        assert_eq!(updated as usize, want_rows.len(), "{n} users");
        assert_eq!(rows, want_rows, "{n} users: audit rows");
        assert_eq!(users, want_users, "{n} users: balances");
        // Ids are dense from 1 here, in username order, one per updated user.
        assert!(
            rows.iter().enumerate().all(|(i, r)| r.0 == i as i64 + 1),
            "{n} users: ids"
        );
    }
}

#[test]
fn a_refresh_committed_in_chunks_writes_the_native_rows() {
    // Seven users per transaction: 158 chunks for 1,100 users, the last one short.
    let runtime = Runtime::load(
        &common::workspace().join(quota_host::COMPONENT_PATH),
        Limits {
            refresh_chunk_users: Some(7),
            ..Limits::default()
        },
    )
    .expect("runtime");
    let n = 1_100;
    let (want_rows, want_users) = native(n);
    let mut w = Worker::new(
        runtime,
        Box::new(SqliteDb::memory(&common::runtime()).expect("memory db")),
        &common::fixture_json(),
    )
    .expect("worker");
    seed(&mut w, n);
    let body = BODY.replace('}', r#","run_id":"chunked"}"#);
    let admin = common::admin();
    let req = quota_core::Request {
        method: "POST",
        path: "/admin/api/quota/refresh",
        query: "",
        body: &body,
        caller: Some(&admin),
    };
    let mut chunks = 0;
    let answer = w
        .chunked(|tx, chunk| {
            assert_eq!(chunk, 7);
            chunks += 1;
            tx.handle_request_step(&req, T0, chunk)
        })
        .expect("refresh");
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(chunks, n / 7 + 1);
    let result: serde_json::Value = serde_json::from_str(&answer.body).expect("json");
    assert_eq!(result["users_updated"], want_rows.len());
    assert_eq!(audit_rows(&mut w), want_rows);
    assert_eq!(w.list_users(T0).expect("users"), want_users);
    // Sent again: the completed run's answer, nothing written.
    let again = w.handle_request(&req, T0).expect("replay");
    assert_eq!(again.body, answer.body);
    assert_eq!(audit_rows(&mut w), want_rows);
}
