//! The engine's schema lives in the component: a fresh database is created by its `migrate`, a file
//! written by quota-hub 0.1.0 (schema 2) is migrated without losing a row, ids are never reused, a
//! newer schema is refused, and two processes starting at once agree.

use crate::common;
mod steps;
mod tables;

use tables::{
    as_before_schema_6, as_before_schema_7, back_to_schema_10, back_to_schema_11, back_to_schema_5,
    back_to_schema_6, back_to_schema_7, back_to_schema_8, indexes, int, rows, tables, version_of,
    without_schema_12, without_schema_7, without_schema_9, worker, SchemaVersion,
};

use quota_core::Timestamp;
use quota_host::{SqlCell, SqliteDb, SqliteOptions, Worker};

const NOW: Timestamp = Timestamp(1_795_300_000);

#[test]
fn a_fresh_database_gets_the_current_schema_once() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("q.db");
    let mut w = worker(&path);
    assert_eq!(version_of(&path), 12);
    // Idempotent: a second migrate finds the current version and does nothing.
    let m = w.migrate().expect("again");
    assert_eq!((m.from_version, m.to_version), (12, 12));
}

#[test]
fn ids_are_never_reused_even_after_the_newest_rows_are_deleted() {
    let dir = tempfile::tempdir().expect("dir");
    let mut w = worker(&dir.path().join("q.db"));
    let admin = common::admin();
    let hub = common::hub();
    common::request(
        &mut w,
        &admin,
        "POST",
        "/admin/api/quota/users/alice",
        r#"{"action":"set","amount":100}"#,
        NOW,
    );
    let (_, s1) = common::request(
        &mut w,
        &hub,
        "POST",
        "/api/quota/sessions",
        r#"{"username":"alice","runtime_minutes":5}"#,
        NOW,
    );
    assert_eq!(s1["session_id"], 1);
    // An operator deletes the newest rows by hand.
    rows(w.db(), "DELETE FROM sessions");
    rows(w.db(), "DELETE FROM transactions");
    let (_, s2) = common::request(
        &mut w,
        &hub,
        "POST",
        "/api/quota/sessions",
        r#"{"username":"alice","server_name":"b","runtime_minutes":5}"#,
        NOW,
    );
    assert_eq!(s2["session_id"], 2, "session id 1 reused: {s2}");
    common::request(
        &mut w,
        &admin,
        "POST",
        "/admin/api/quota/users/alice",
        r#"{"action":"add","amount":1}"#,
        NOW,
    );
    let ids = rows(w.db(), "SELECT id FROM transactions");
    assert_eq!(ids, vec![vec![SqlCell::Int(2)]], "transaction id 1 reused");
}

#[test]
fn a_quota_hub_0_1_0_file_migrates_without_losing_a_row() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("old.db");
    std::fs::copy(
        common::workspace().join("tests/fixtures/quota-hub-0.1.0.db"),
        &path,
    )
    .expect("copy fixture");
    let mut old = SqliteDb::open(&common::runtime(), &path, SqliteOptions::default()).expect("open old");
    assert_eq!(old.schema_version().unwrap(), 2);
    let before = tables(&mut old);
    drop(old);

    let mut w = worker(&path);
    assert_eq!(version_of(&path), 12);
    let mut after = tables(w.db());
    // Schema 5's usage sums are built from the ledger: the credits of every `usage` row, by user.
    let sums = rows(
        w.db(),
        "SELECT username, SUM(credits) FROM user_usage_days GROUP BY username ORDER BY username",
    );
    let ledger = rows(
        w.db(),
        "SELECT username, -SUM(amount) FROM transactions WHERE transaction_type = 'usage'
         GROUP BY username ORDER BY username",
    );
    assert!(!ledger.is_empty(), "the fixture has charges");
    assert_eq!(sums, ledger);
    assert!(!after.remove("usage_days").expect("usage_days").is_empty());
    assert!(!after
        .remove("user_usage_days")
        .expect("user_usage_days")
        .is_empty());
    assert_eq!(
        after.remove("memberships"),
        Some(Vec::new()),
        "schema 4 adds memberships"
    );
    assert_eq!(
        after.remove("group_members"),
        Some(Vec::new()),
        "and group_members"
    );
    let after = as_before_schema_6(after);
    assert_eq!(before, after, "every row of every table, ids included, is kept");
    for table in [
        "users",
        "transactions",
        "sessions",
        "refresh_runs",
        "api_tokens",
        "idempotency",
    ] {
        assert!(!after[table].is_empty(), "the fixture has rows in {table}");
    }
    // The ledger still reconciles: each balance is the sum of its transactions.
    for r in rows(w.db(), "SELECT u.username, u.balance, COALESCE(SUM(t.amount), 0) FROM users u LEFT JOIN transactions t ON t.username = u.username GROUP BY u.username") {
        assert_eq!(int(&r[1]), int(&r[2]), "{:?}", r[0]);
    }
    // The engine reads and writes the migrated file: the active session ends and is billed, and
    // new ids continue after the largest old one.
    let (st, end) = common::request(
        &mut w,
        &common::hub(),
        "POST",
        "/api/quota/sessions/4/end",
        "{}",
        Timestamp(1_795_230_005 + 120),
    );
    assert_eq!(
        (st, &end["status"]),
        (200, &serde_json::json!("completed")),
        "{end}"
    );
    let max_tx = int(&rows(w.db(), "SELECT MAX(id) FROM transactions")[0][0]);
    assert_eq!(max_tx, 11, "the usage charge follows the 10 old transactions");
    let (_, s) = common::request(
        &mut w,
        &common::hub(),
        "POST",
        "/api/quota/sessions",
        r#"{"username":"alice","runtime_minutes":5}"#,
        NOW,
    );
    assert_eq!(s["session_id"], 5, "{s}");
}

#[test]
fn a_newer_schema_is_refused_with_a_clear_message_and_nothing_changes() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("q.db");
    drop(worker(&path));
    let conn = rusqlite::Connection::open(&path).expect("open");
    conn.pragma_update(None, "user_version", 99).expect("bump");
    drop(conn);
    let db = SqliteDb::open(&common::runtime(), &path, SqliteOptions::default()).expect("open");
    let err = Worker::new(common::runtime(), Box::new(db), &common::fixture_json())
        .err()
        .expect("refused");
    assert!(err.to_string().contains("schema version 99"), "{err}");
    assert!(err.to_string().contains("newer release"), "{err}");
    assert_eq!(version_of(&path), 99);
}

/// Expand/contract (docs/upgrade.md): a newer release's schema records the oldest engine schema
/// that may write it, where this engine reads its version. Here schema 13 with floor 12: this
/// engine (12) runs on it without migrating, writes, and leaves both numbers as they were; with
/// floor 13 it refuses, naming both restore commands, and changes nothing.
#[test]
fn a_newer_schema_is_written_as_it_is_when_its_floor_allows_and_refused_below_it() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("q.db");
    drop(worker(&path));
    let conn = rusqlite::Connection::open(&path).expect("open");
    conn.execute_batch("INSERT INTO quota_schema (version, floor) VALUES (13, 12); PRAGMA user_version = 12")
        .expect("a newer release's schema");
    drop(conn);
    let db = SqliteDb::open(&common::runtime(), &path, SqliteOptions::default()).expect("open");
    let mut w = Worker::new(common::runtime(), Box::new(db), &common::fixture_json()).expect("runs on it");
    let m = w.migrate().expect("nothing to migrate");
    assert_eq!((m.from_version, m.to_version), (13, 13));
    assert_eq!(w.check_schema().expect("writable as it is").to_version, 13);
    let (st, b) = common::request(
        &mut w,
        &common::admin(),
        "POST",
        "/admin/api/quota/users/alice",
        r#"{"action":"set","amount":7}"#,
        NOW,
    );
    assert_eq!(st, 200, "{b}");
    drop(w);
    assert_eq!(version_of(&path), 13);
    let conn = rusqlite::Connection::open(&path).expect("open");
    let floor: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .expect("floor");
    assert_eq!(floor, 12);
    conn.execute_batch("INSERT INTO quota_schema (version, floor) VALUES (14, 13); PRAGMA user_version = 13")
        .expect("a release that raised the floor");
    drop(conn);
    let db = SqliteDb::open(&common::runtime(), &path, SqliteOptions::default()).expect("open");
    let err = Worker::new(common::runtime(), Box::new(db), &common::fixture_json())
        .err()
        .expect("refused")
        .to_string();
    for says in [
        "schema version 14",
        "schema 13 or newer",
        "writes schema 12",
        "quota-hub restore",
        "jupyterhub-quota restore",
    ] {
        assert!(err.contains(says), "{says}: {err}");
    }
    assert_eq!(version_of(&path), 14);
}

/// A worker that may not migrate creates an empty database, opens a current one, and refuses an
/// older one, naming the step that migrates, with nothing changed.
#[test]
fn a_worker_that_may_not_migrate_creates_an_empty_database_and_refuses_an_older_one() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("q.db");
    let open = || {
        let db = SqliteDb::open(&common::runtime(), &path, SqliteOptions::default()).expect("open");
        Worker::without_migrating(common::runtime(), Box::new(db), &common::fixture_json())
    };
    drop(open().expect("an empty database is created"));
    assert_eq!(version_of(&path), 12);
    drop(open().expect("a current one opens"));
    let mut w = worker(&path);
    back_to_schema_8(w.db());
    drop(w);
    let err = open().err().expect("an older one is refused").to_string();
    assert!(
        err.contains("schema version 8") && err.contains("quota-hub migrate"),
        "{err}"
    );
    assert_eq!(version_of(&path), 8);
}

#[test]
fn hosts_starting_at_once_on_one_new_file_both_come_up() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("q.db");
    let go = std::sync::Arc::new(std::sync::Barrier::new(4));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (path, go) = (path.clone(), go.clone());
            std::thread::spawn(move || {
                // Open after the barrier: opening a new file (the switch to WAL) is part of the race,
                // and a thread that fails cannot leave the others waiting for it.
                go.wait();
                let db = SqliteDb::open(&common::runtime(), &path, SqliteOptions::default())
                    .map_err(|e| format!("open: {e:?}"))?;
                Worker::new(common::runtime(), Box::new(db), &common::fixture_json())
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            })
        })
        .collect();
    for h in handles {
        h.join().expect("thread").expect("worker came up");
    }
    let mut db = SqliteDb::open(&common::runtime(), &path, SqliteOptions::default()).expect("open");
    assert_eq!(db.schema_version().unwrap(), 12);
    assert_eq!(
        rows(&mut db, "SELECT COUNT(*) FROM users"),
        vec![vec![SqlCell::Int(0)]]
    );
}

/// The migration from 4 rebuilds the usage sums from the whole ledger: it runs under the
/// contract's migration deadline, not a call's (here a call may run 1 ms; the rebuild takes longer).
#[test]
fn a_long_migration_is_not_stopped_at_the_call_deadline() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("q.db");
    let mut w = worker(&path);
    let ledger: Vec<Vec<SqlCell>> = (0..300_000i64)
        .map(|i| {
            vec![
                SqlCell::Text(format!("user{}", i % 1000)),
                SqlCell::Int(NOW.0 - i * 60),
            ]
        })
        .collect();
    w.db().begin().unwrap();
    w.db()
        .execute_many(
            "INSERT INTO transactions (username, amount, transaction_type, resource_type, description,
             balance_before, balance_after, created_at, created_by)
             VALUES (?1, -1, 'usage', 'cpu', 'Session', 0, -1, ?2, NULL)",
            &ledger,
        )
        .unwrap();
    back_to_schema_5(w.db());
    w.db().query("PRAGMA user_version = 4", &[]).unwrap();
    w.db().commit().unwrap();
    drop(w);
    let limits = quota_host::Limits {
        call_deadline: Some(std::time::Duration::from_millis(1)),
        tick: Some(std::time::Duration::from_millis(1)),
        ..Default::default()
    };
    let rt = common::load(quota_host::COMPONENT_PATH, limits);
    let db = SqliteDb::open(&rt, &path, SqliteOptions::default()).expect("open");
    let mut w = Worker::new(rt, Box::new(db), &common::fixture_json()).expect("migrated within its deadline");
    let sums = rows(w.db(), "SELECT SUM(credits) FROM user_usage_days");
    assert_eq!(sums, vec![vec![SqlCell::Int(300_000)]]);
    assert_eq!(rows(w.db(), "PRAGMA user_version"), vec![vec![SqlCell::Int(9)]]);
}
