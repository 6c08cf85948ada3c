//! Shared commit (`Worker::shared_commit`): several write calls in one transaction, each in its own
//! savepoint. A call that fails (the host's error after a write, an injected storage error, a guest
//! trap after a write) is undone alone and the others are kept, with one commit for them all; a
//! failed commit fails every call and keeps nothing; only committed calls' observations are told.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use quota_core::{Caller, Request, Timestamp};
use quota_host::observe::{GateResult, Observation};
use quota_host::{
    Database, Dialect, HostError, Observer, SharedCall, SqlCell, SqlError, SqliteDb, SqliteOptions, Tx,
    Worker,
};

const NOW: Timestamp = Timestamp(1_795_000_000);

/// A SQLite file that counts commits, fails the next commit on demand, and fails one statement
/// that contains a marker.
struct Watched {
    inner: SqliteDb,
    commits: Arc<AtomicUsize>,
    fail_commit: Arc<AtomicBool>,
    fail_marker: Option<&'static str>,
}

impl Database for Watched {
    fn dialect(&self) -> Dialect {
        self.inner.dialect()
    }
    fn query(&mut self, sql: &str, params: &[SqlCell]) -> Result<Vec<Vec<SqlCell>>, SqlError> {
        let marked = self
            .fail_marker
            .is_some_and(|m| params.iter().any(|p| matches!(p, SqlCell::Text(t) if t == m)));
        if marked {
            return Err(SqlError::Other("injected: disk I/O error".into()));
        }
        self.inner.query(sql, params)
    }
    fn execute_many(&mut self, sql: &str, rows: &[Vec<SqlCell>]) -> Result<u64, SqlError> {
        self.inner.execute_many(sql, rows)
    }
    fn begin(&mut self) -> Result<(), SqlError> {
        self.inner.begin()
    }
    fn begin_read(&mut self) -> Result<(), SqlError> {
        self.inner.begin_read()
    }
    fn savepoint(&mut self) -> Result<(), SqlError> {
        self.inner.savepoint()
    }
    fn release_savepoint(&mut self) -> Result<(), SqlError> {
        self.inner.release_savepoint()
    }
    fn rollback_to_savepoint(&mut self) -> Result<(), SqlError> {
        self.inner.rollback_to_savepoint()
    }
    fn commit(&mut self) -> Result<(), SqlError> {
        if self.fail_commit.swap(false, Ordering::SeqCst) {
            return Err(SqlError::Other("injected: commit failed (disk full)".into()));
        }
        self.commits.fetch_add(1, Ordering::SeqCst);
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

#[derive(Default)]
struct Seen {
    observations: Mutex<Vec<Observation>>,
    traps: AtomicUsize,
}

impl Observer for Seen {
    fn committed(&self, observations: &[Observation]) {
        self.observations
            .lock()
            .expect("observations")
            .extend_from_slice(observations);
    }
    fn trapped(&self) {
        self.traps.fetch_add(1, Ordering::SeqCst);
    }
    fn busy(&self) {}
    fn conflict_retried(&self) {}
}

fn post(tx: &mut Tx<'_>, caller: &Caller, path: &str, body: &str) -> Result<(u16, String), HostError> {
    let r = tx.handle_request(
        &Request {
            method: "POST",
            path,
            query: "",
            body,
            caller: Some(caller),
        },
        NOW,
    )?;
    Ok((r.status, r.body))
}

fn set(user: &'static str, amount: i64) -> SharedCall<'static, (u16, String)> {
    Box::new(move |tx| {
        post(
            tx,
            &common::admin(),
            &format!("/admin/api/quota/users/{user}"),
            &format!(r#"{{"action":"set","amount":{amount}}}"#),
        )
    })
}

fn start(user: &'static str) -> SharedCall<'static, (u16, String)> {
    Box::new(move |tx| {
        post(
            tx,
            &common::hub(),
            "/api/quota/sessions",
            &format!(r#"{{"username":"{user}","runtime_minutes":5}}"#),
        )
    })
}

struct Setup {
    worker: Worker,
    commits: Arc<AtomicUsize>,
    fail_commit: Arc<AtomicBool>,
    seen: Arc<Seen>,
    _dir: tempfile::TempDir,
}

fn setup(fail_marker: Option<&'static str>) -> Setup {
    let dir = tempfile::tempdir().expect("dir");
    let commits = Arc::new(AtomicUsize::new(0));
    let fail_commit = Arc::new(AtomicBool::new(false));
    let db = Watched {
        inner: SqliteDb::open(
            &common::runtime(),
            &dir.path().join("q.db"),
            SqliteOptions::default(),
        )
        .expect("db"),
        commits: commits.clone(),
        fail_commit: fail_commit.clone(),
        fail_marker,
    };
    let mut worker =
        Worker::new(common::fault_runtime(), Box::new(db), &common::fixture_json()).expect("worker");
    let seen = Arc::new(Seen::default());
    worker.observe(seen.clone());
    commits.store(0, Ordering::SeqCst);
    Setup {
        worker,
        commits,
        fail_commit,
        seen,
        _dir: dir,
    }
}

/// The user's balance.
fn balance(w: &mut Worker, user: &str) -> Option<i64> {
    let path = format!("/admin/api/quota/users/{user}");
    let (status, body) = common::request(w, &common::admin(), "GET", &path, "", NOW);
    assert_eq!(status, 200, "{body}");
    body["balance"].as_i64()
}

#[test]
fn failing_calls_are_undone_alone_and_the_rest_commit_once() {
    let mut s = setup(Some("dave"));
    let host_refuses: SharedCall<'static, (u16, String)> = Box::new(|tx| {
        post(
            tx,
            &common::admin(),
            "/admin/api/quota/users/bob",
            r#"{"action":"set","amount":20}"#,
        )?;
        Err(HostError::Storage(SqlError::Other(
            "the host refused after a write".into(),
        )))
    });
    let trap: SharedCall<'static, (u16, String)> =
        Box::new(|tx| post(tx, &common::admin(), "/__fault/trap-after-write", ""));
    let answers = s.worker.shared_commit(vec![
        set("alice", 10),
        host_refuses,
        start("alice"),
        trap,
        set("dave", 5), // its write fails in the database
        set("carol", 30),
    ]);
    let shape: Vec<Result<u16, String>> = answers
        .into_iter()
        .map(|a| a.map(|(status, _)| status).map_err(|e| e.to_string()))
        .collect();
    assert_eq!(shape[0], Ok(200));
    assert!(
        matches!(&shape[1], Err(m) if m.contains("the host refused")),
        "{shape:?}"
    );
    assert_eq!(shape[2], Ok(201));
    assert!(
        matches!(&shape[3], Err(m) if m.contains("unreachable")),
        "{shape:?}"
    );
    assert!(matches!(&shape[4], Err(m) if m.contains("disk I/O")), "{shape:?}");
    assert_eq!(shape[5], Ok(200));
    assert_eq!(s.commits.load(Ordering::SeqCst), 1, "one commit for the calls");

    assert_eq!(balance(&mut s.worker, "alice"), Some(10));
    assert_eq!(balance(&mut s.worker, "carol"), Some(30));
    let dump = quota_host::dump(s.worker.db(), &[]).expect("dump");
    assert!(
        !dump.contains(r#"Text("bob")"#),
        "bob's write was undone:\n{dump}"
    );
    assert!(!dump.contains("dave"), "dave's write failed:\n{dump}");
    assert!(
        !dump.contains("fault-written"),
        "the trapped call's write was undone:\n{dump}"
    );
    assert_eq!(s.seen.traps.load(Ordering::SeqCst), 1);
    // Only the committed start is observed (the sets are not observed).
    assert_eq!(
        *s.seen.observations.lock().expect("observations"),
        vec![Observation::Gate {
            result: GateResult::Allowed,
            resource_type: "cpu".into()
        }]
    );

    // The worker goes on: a fresh instance after the trap, the next shared commits.
    let commits = s.commits.load(Ordering::SeqCst);
    let answers = s.worker.shared_commit(vec![set("bob", 7), set("erin", 8)]);
    assert!(answers.iter().all(|a| matches!(a, Ok((200, _)))), "{answers:?}");
    assert_eq!(s.commits.load(Ordering::SeqCst), commits + 1);
}

#[test]
fn a_failed_commit_fails_every_call_that_shared_it_and_keeps_nothing() {
    let mut s = setup(None);
    let answers = s.worker.shared_commit(vec![set("alice", 10)]);
    assert!(matches!(answers[0], Ok((200, _))));
    let before = quota_host::dump(s.worker.db(), &[]).expect("dump");
    let observed_before = s.seen.observations.lock().expect("observations").len();

    s.fail_commit.store(true, Ordering::SeqCst);
    let answers = s
        .worker
        .shared_commit(vec![set("alice", 11), start("alice"), set("bob", 12)]);
    assert_eq!(answers.len(), 3);
    for a in &answers {
        assert!(
            matches!(a, Err(HostError::Storage(SqlError::Other(m))) if m.contains("commit failed")),
            "{a:?}"
        );
    }
    assert_eq!(
        quota_host::dump(s.worker.db(), &[]).expect("dump"),
        before,
        "nothing of the calls is kept"
    );
    assert_eq!(
        s.seen.observations.lock().expect("observations").len(),
        observed_before,
        "no observations of calls that did not commit"
    );

    // The next shared commit is unaffected.
    let answers = s.worker.shared_commit(vec![set("alice", 13), set("bob", 14)]);
    assert!(answers.iter().all(|a| matches!(a, Ok((200, _)))), "{answers:?}");
    assert_eq!(balance(&mut s.worker, "alice"), Some(13));
}

#[test]
fn a_shared_commit_of_one_is_an_ordinary_transaction() {
    let mut s = setup(None);
    let answers = s.worker.shared_commit(vec![set("zoe", 50)]);
    assert!(matches!(&answers[0], Ok((200, _))), "{answers:?}");
    assert_eq!(s.commits.load(Ordering::SeqCst), 1);
}
