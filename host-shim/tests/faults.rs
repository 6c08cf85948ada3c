//! A trap, a runaway guest, or a failed storage write mid-operation leaves the database exactly as
//! before (compared as a full dump), and the worker keeps serving.

mod common;

use quota_core::store::{
    Change, NewSession, RefreshRun, Session, SessionStatus, Store, Transaction, UserRecord,
};
use quota_core::{Caller, Request, StoreError, Timestamp};
use quota_host::{
    Backend, Durability, HostError, HostTables, IdempotencyKey, IdempotencyRecord, SqliteBackend,
    TokenRecord, Worker,
};

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

fn seeded(runtime: std::sync::Arc<quota_host::Runtime>, backend: Box<dyn Backend>) -> Worker {
    let mut w = Worker::new(runtime, backend, &common::fixture_json()).expect("worker");
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
    let backend = SqliteBackend::open(&dir.path().join("q.db"), Durability::Full).expect("db");
    let mut w = seeded(common::fault_runtime(), Box::new(backend));
    let before = w.backend().dump().expect("dump");
    let err = post(&mut w, &common::admin(), "/__fault/trap-after-write", "").expect_err("the guest traps");
    assert!(
        matches!(&err, HostError::Trap(m) if m.contains("unreachable")),
        "{err}"
    );
    assert_eq!(
        w.backend().dump().expect("dump"),
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
    let backend = SqliteBackend::open(&dir.path().join("q.db"), Durability::Full).expect("db");
    let mut w = seeded(common::fault_runtime(), Box::new(backend));
    let before = w.backend().dump().expect("dump");
    let err = post(&mut w, &common::admin(), "/__fault/spin", "").expect_err("the deadline stops the guest");
    assert!(
        matches!(&err, HostError::Trap(m) if m.contains("interrupt")),
        "{err}"
    );
    assert_eq!(w.backend().dump().expect("dump"), before);
    let r = post(&mut w, &common::hub(), "/api/quota/sessions/1/end", "{}").expect("next call");
    assert_eq!(r.status, 200, "{}", r.body);
}

/// SQLite that fails the `fail_at`-th write (counting every write call from creation).
struct FailingWrites {
    inner: SqliteBackend,
    writes: u32,
    fail_at: u32,
}

impl FailingWrites {
    fn write(&mut self) -> Result<(), StoreError> {
        self.writes += 1;
        if self.writes == self.fail_at {
            return Err(StoreError("injected: disk I/O error".into()));
        }
        Ok(())
    }
}

impl Backend for FailingWrites {
    fn begin(&mut self) -> Result<(), StoreError> {
        self.inner.begin()
    }
    fn commit(&mut self) -> Result<(), StoreError> {
        self.inner.commit()
    }
    fn rollback(&mut self) -> Result<(), StoreError> {
        self.inner.rollback()
    }
    fn dump(&mut self) -> Result<String, StoreError> {
        self.inner.dump()
    }
}

impl HostTables for FailingWrites {
    fn put_token(&mut self, token: &TokenRecord) -> Result<(), StoreError> {
        self.write()?;
        self.inner.put_token(token)
    }
    fn find_token(&mut self, hash: &str) -> Result<Option<TokenRecord>, StoreError> {
        self.inner.find_token(hash)
    }
    fn get_idempotent(&mut self, key: &IdempotencyKey) -> Result<Option<IdempotencyRecord>, StoreError> {
        self.inner.get_idempotent(key)
    }
    fn put_idempotent(&mut self, key: &IdempotencyKey, record: &IdempotencyRecord) -> Result<(), StoreError> {
        self.write()?;
        self.inner.put_idempotent(key, record)
    }
    fn purge_idempotent(&mut self, before: Timestamp) -> Result<u64, StoreError> {
        self.inner.purge_idempotent(before)
    }
}

impl Store for FailingWrites {
    fn get_user(&mut self, username: &str) -> Result<Option<UserRecord>, StoreError> {
        self.inner.get_user(username)
    }
    fn put_user(&mut self, user: &UserRecord) -> Result<(), StoreError> {
        self.write()?;
        self.inner.put_user(user)
    }
    fn scan_users(&mut self, after: Option<&str>, limit: usize) -> Result<Vec<UserRecord>, StoreError> {
        self.inner.scan_users(after, limit)
    }
    fn record_changes(&mut self, changes: &[Change]) -> Result<(), StoreError> {
        self.write()?;
        self.inner.record_changes(changes)
    }
    fn recent_transactions(&mut self, username: &str, limit: usize) -> Result<Vec<Transaction>, StoreError> {
        self.inner.recent_transactions(username, limit)
    }
    fn scan_transactions(
        &mut self,
        u: Option<&str>,
        after: i64,
        limit: usize,
    ) -> Result<Vec<Transaction>, StoreError> {
        self.inner.scan_transactions(u, after, limit)
    }
    fn insert_session(&mut self, s: &NewSession) -> Result<i64, StoreError> {
        self.write()?;
        self.inner.insert_session(s)
    }
    fn get_session(&mut self, id: i64) -> Result<Option<Session>, StoreError> {
        self.inner.get_session(id)
    }
    fn update_session(&mut self, s: &Session) -> Result<(), StoreError> {
        self.write()?;
        self.inner.update_session(s)
    }
    fn active_sessions(&mut self, username: &str) -> Result<Vec<Session>, StoreError> {
        self.inner.active_sessions(username)
    }
    fn stale_sessions(&mut self, cutoff: Timestamp) -> Result<Vec<Session>, StoreError> {
        self.inner.stale_sessions(cutoff)
    }
    fn scan_sessions(
        &mut self,
        u: Option<&str>,
        st: Option<SessionStatus>,
        after: i64,
        limit: usize,
    ) -> Result<Vec<Session>, StoreError> {
        self.inner.scan_sessions(u, st, after, limit)
    }
    fn get_refresh_run(&mut self, id: &str) -> Result<Option<RefreshRun>, StoreError> {
        self.inner.get_refresh_run(id)
    }
    fn put_refresh_run(&mut self, run: &RefreshRun) -> Result<(), StoreError> {
        self.write()?;
        self.inner.put_refresh_run(run)
    }
}

#[test]
fn a_storage_write_failing_mid_operation_rolls_back_every_earlier_write() {
    // Seeding makes 3 write calls (2 changes, 1 session). The refresh then writes its page of two
    // changes (alice and bob with their transactions) and its run record: fail each in turn.
    for nth_write_of_refresh in 1..=2 {
        let dir = tempfile::tempdir().expect("dir");
        let inner = SqliteBackend::open(&dir.path().join("q.db"), Durability::Full).expect("db");
        let backend = FailingWrites {
            inner,
            writes: 0,
            fail_at: 3 + nth_write_of_refresh,
        };
        let mut w = seeded(common::runtime(), Box::new(backend));
        let before = w.backend().dump().expect("dump");
        let body = r#"{"action":"add","amount":5,"run_id":"r1"}"#;
        let err =
            post(&mut w, &common::admin(), "/admin/api/quota/refresh", body).expect_err("storage fails");
        assert!(
            matches!(&err, HostError::Storage(m) if m.contains("injected")),
            "{err}"
        );
        assert_eq!(
            w.backend().dump().expect("dump"),
            before,
            "write {nth_write_of_refresh} failed"
        );
        // The same request succeeds once storage is healthy again, and applies exactly once.
        let r = post(&mut w, &common::admin(), "/admin/api/quota/refresh", body).expect("retry");
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(r.body.contains(r#""users_updated":2"#), "{}", r.body);
    }
}

#[test]
fn a_failing_idempotency_record_rolls_back_the_change_it_describes() {
    // Seeding makes 3 write calls; the keyed add writes its change (4th), then its replay record (5th).
    let dir = tempfile::tempdir().expect("dir");
    let inner = SqliteBackend::open(&dir.path().join("q.db"), Durability::Full).expect("db");
    let backend = FailingWrites {
        inner,
        writes: 0,
        fail_at: 5,
    };
    let mut w = seeded(common::runtime(), Box::new(backend));
    let before = w.backend().dump().expect("dump");
    let admin = common::admin();
    let req = Request {
        method: "POST",
        path: "/admin/api/quota/alice",
        query: "",
        body: r#"{"action":"add","amount":5}"#,
        caller: Some(&admin),
    };
    let key = IdempotencyKey {
        caller: "admin".into(),
        method: "POST".into(),
        path: "/admin/api/quota/alice".into(),
        key: "k".into(),
    };
    let err = w
        .handle_request_once(&req, Timestamp(1_795_000_000), Some((&key, "h")))
        .expect_err("storage fails");
    assert!(
        matches!(&err, HostError::Storage(m) if m.contains("injected")),
        "{err}"
    );
    assert_eq!(w.backend().dump().expect("dump"), before);
}
