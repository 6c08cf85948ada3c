//! A trap, a runaway guest, or a failed storage write mid-operation leaves the database exactly as
//! before (compared as a full dump), and the worker keeps serving.

use crate::common;

use std::sync::{Arc, Mutex};

use quota_core::{Caller, Request, Timestamp};
use quota_host::{Database, Dialect, HostError, SqlCell, SqlError, SqliteDb, SqliteOptions, Worker};

const NOW: Timestamp = Timestamp(1_795_000_000);

fn post(w: &mut Worker, caller: &Caller, path: &str, body: &str) -> Result<quota_core::Response, HostError> {
    w.handle_request(
        &Request {
            method: "POST",
            path,
            query: "",
            body,
            caller: Some(caller),
        },
        NOW,
    )
}

fn seeded(runtime: std::sync::Arc<quota_host::Runtime>, db: Box<dyn Database>) -> Worker {
    let mut w = Worker::new(runtime, db, &common::fixture_json()).expect("worker");
    for (u, n) in [("alice", 100), ("bob", 50)] {
        let r = post(
            &mut w,
            &common::admin(),
            &format!("/admin/api/quota/users/{u}"),
            &format!(r#"{{"action":"set","amount":{n}}}"#),
        )
        .expect("seed");
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let r = post(
        &mut w,
        &common::hub(),
        "/api/quota/sessions",
        r#"{"username":"alice","runtime_minutes":30}"#,
    )
    .expect("start");
    assert_eq!(r.status, 201, "{}", r.body);
    w
}

#[test]
fn a_guest_trap_after_a_write_rolls_everything_back_and_the_worker_recovers() {
    let dir = tempfile::tempdir().expect("dir");
    let db = SqliteDb::open(
        &common::runtime(),
        &dir.path().join("q.db"),
        SqliteOptions::default(),
    )
    .expect("db");
    let mut w = seeded(common::fault_runtime(), Box::new(db));
    let before = quota_host::dump(w.db(), &[]).expect("dump");
    let err = post(&mut w, &common::admin(), "/__fault/trap-after-write", "").expect_err("the guest traps");
    assert!(
        matches!(&err, HostError::Trap(m) if m.contains("unreachable")),
        "{err}"
    );
    assert_eq!(
        quota_host::dump(w.db(), &[]).expect("dump"),
        before,
        "the row written before the trap must be gone"
    );
    assert!(!before.contains("fault-written"));
    // The worker has a fresh, configured instance and serves the next call.
    let r = post(
        &mut w,
        &common::admin(),
        "/admin/api/quota/users/bob",
        r#"{"action":"add","amount":1}"#,
    )
    .expect("next call");
    assert_eq!(
        (r.status, r.body.contains(r#""balance":51"#)),
        (200, true),
        "{}",
        r.body
    );
}

#[test]
fn a_guest_stuck_in_a_loop_is_stopped_by_the_deadline_and_the_host_keeps_serving() {
    let dir = tempfile::tempdir().expect("dir");
    let db = SqliteDb::open(
        &common::runtime(),
        &dir.path().join("q.db"),
        SqliteOptions::default(),
    )
    .expect("db");
    let mut w = seeded(common::fault_runtime(), Box::new(db));
    let before = quota_host::dump(w.db(), &[]).expect("dump");
    let err = post(&mut w, &common::admin(), "/__fault/spin", "").expect_err("the deadline stops the guest");
    assert!(
        matches!(&err, HostError::Trap(m) if m.contains("interrupt")),
        "{err}"
    );
    assert_eq!(quota_host::dump(w.db(), &[]).expect("dump"), before);
    let r = post(&mut w, &common::hub(), "/api/quota/sessions/1/end", "{}").expect("next call");
    assert_eq!(r.status, 200, "{}", r.body);
}

/// SQLite whose n-th write statement from the moment it is armed fails with a chosen error.
struct Faulty {
    inner: SqliteDb,
    plan: Arc<Mutex<Option<(u32, SqlError)>>>,
}

impl Faulty {
    fn write(&mut self) -> Result<(), SqlError> {
        let mut plan = self.plan.lock().expect("plan");
        if let Some((n, e)) = plan.as_mut() {
            *n -= 1;
            if *n == 0 {
                let e = e.clone();
                *plan = None;
                return Err(e);
            }
        }
        Ok(())
    }
}

fn is_write(sql: &str) -> bool {
    let s = sql.trim_start().to_ascii_uppercase();
    ["INSERT", "UPDATE", "DELETE"].iter().any(|w| s.starts_with(w))
}

impl Database for Faulty {
    fn dialect(&self) -> Dialect {
        self.inner.dialect()
    }
    fn query(&mut self, sql: &str, params: &[SqlCell]) -> Result<Vec<Vec<SqlCell>>, SqlError> {
        if is_write(sql) {
            self.write()?;
        }
        self.inner.query(sql, params)
    }
    fn execute_many(&mut self, sql: &str, rows: &[Vec<SqlCell>]) -> Result<u64, SqlError> {
        self.write()?;
        self.inner.execute_many(sql, rows)
    }
    fn begin(&mut self) -> Result<(), SqlError> {
        self.inner.begin()
    }
    fn begin_read(&mut self) -> Result<(), SqlError> {
        self.inner.begin_read()
    }
    fn commit(&mut self) -> Result<(), SqlError> {
        self.inner.commit()
    }
    fn rollback(&mut self) -> Result<(), SqlError> {
        self.inner.rollback()
    }
    fn contract(&self) -> &std::sync::Arc<quota_host::HostingContract> {
        self.inner.contract()
    }
    fn in_transaction(&self) -> bool {
        self.inner.in_transaction()
    }
}

#[test]
fn a_storage_write_failing_mid_operation_rolls_back_every_earlier_write() {
    // A refresh of alice and bob with a run id writes three statements: the user rows, their
    // audit rows, and the run record. Fail each in turn, with each kind of storage error.
    let errors = [
        SqlError::Other("injected: disk I/O error".into()),
        SqlError::Busy,
        SqlError::Constraint("injected: UNIQUE constraint failed".into()),
    ];
    for nth_write_of_refresh in 1..=3 {
        for injected in &errors {
            let dir = tempfile::tempdir().expect("dir");
            let plan = Arc::new(Mutex::new(None));
            let db = Faulty {
                inner: SqliteDb::open(
                    &common::runtime(),
                    &dir.path().join("q.db"),
                    SqliteOptions::default(),
                )
                .expect("db"),
                plan: plan.clone(),
            };
            let mut w = seeded(common::runtime(), Box::new(db));
            let before = quota_host::dump(w.db(), &[]).expect("dump");
            *plan.lock().expect("plan") = Some((nth_write_of_refresh, injected.clone()));
            let body = r#"{"action":"add","amount":5,"run_id":"r1"}"#;
            let err =
                post(&mut w, &common::admin(), "/admin/api/quota/refresh", body).expect_err("storage fails");
            assert!(
                matches!(&err, HostError::Storage(e) if e == injected),
                "write {nth_write_of_refresh}: {err}"
            );
            assert_eq!(err.is_transient(w.contract()), *injected == SqlError::Busy);
            assert_eq!(
                quota_host::dump(w.db(), &[]).expect("dump"),
                before,
                "write {nth_write_of_refresh} failed with {injected}"
            );
            // The same request succeeds once storage is healthy again, and applies exactly once.
            let r = post(&mut w, &common::admin(), "/admin/api/quota/refresh", body).expect("retry");
            assert_eq!(r.status, 200, "{}", r.body);
            assert!(r.body.contains(r#""users_updated":2"#), "{}", r.body);
            let again = post(&mut w, &common::admin(), "/admin/api/quota/refresh", body).expect("replay");
            assert_eq!(again.body, r.body);
            let ledger = quota_host::dump(w.db(), &[]).expect("dump");
            assert_eq!(ledger.matches("auto_refresh").count(), 2, "{ledger}");
        }
    }
}
