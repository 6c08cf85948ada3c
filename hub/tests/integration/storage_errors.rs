//! Storage failures through the real server, caused for real: another process holding the write
//! lock (`busy`: 503, retry later) and a trigger that makes SQLite refuse a write (a constraint
//! error: 500). Each rolls the whole request back: the database is byte for byte as before, and
//! the same request succeeds once the cause is gone, applied once.

use crate::common;

use common::{http, json, Server};
use quota_host::{Database, SqliteDb, SqliteOptions};

struct Setup {
    _dir: tempfile::TempDir,
    server: Server,
    admin: String,
    agent: ureq::Agent,
}

fn setup(extra: &[&str]) -> Setup {
    let setup = common::example();
    let server = setup.start(extra);
    let admin = setup.token("root", true, &[]);
    let agent = common::agent();
    let s = Setup {
        _dir: setup.dir,
        server,
        admin,
        agent,
    };
    let (st, b) = s.post(
        "/admin/api/quota/users/alice",
        r#"{"action":"set","amount":100}"#,
        &[],
    );
    assert_eq!(st, 200, "{b}");
    s
}

impl Setup {
    fn post(&self, path: &str, body: &str, headers: &[(&str, &str)]) -> (u16, String) {
        let url = format!("{}{path}", self.server.url);
        http(&self.agent, "POST", &url, Some(&self.admin), Some(body), headers)
    }

    fn get(&self, path: &str) -> (u16, String) {
        let url = format!("{}{path}", self.server.url);
        http(&self.agent, "GET", &url, Some(&self.admin), None, &[])
    }

    /// A second connection to the server's file, as another process would have.
    fn other_process(&self) -> SqliteDb {
        SqliteDb::open(&common::runtime(), &self.server.db, SqliteOptions::default()).expect("open")
    }
}

#[test]
fn a_write_locked_out_by_another_process_gets_503_and_changes_nothing() {
    let s = setup(&["--busy-timeout-ms", "200"]);
    let mut holder = s.other_process();
    holder.begin().expect("take the write lock");
    let before = common::dump(&s.server.db);

    let (st, body) = s.post(
        "/admin/api/quota/users/alice",
        r#"{"action":"add","amount":5}"#,
        &[],
    );
    assert_eq!(st, 503, "{body}");
    assert_eq!(json(&body)["error"], "The database is busy; retry");
    // Reads go on while the lock is held (a WAL snapshot).
    let (st, body) = s.get("/admin/api/quota/users/alice");
    assert_eq!((st, json(&body)["balance"].as_i64()), (200, Some(100)), "{body}");

    holder.rollback().expect("release");
    assert_eq!(
        common::dump(&s.server.db),
        before,
        "a busy request wrote something"
    );
    let (st, body) = s.post(
        "/admin/api/quota/users/alice",
        r#"{"action":"add","amount":5}"#,
        &[],
    );
    assert_eq!((st, json(&body)["balance"].as_i64()), (200, Some(105)), "{body}");
    // The line is written before the answer; wait for the reader of the server's stderr to see it.
    s.server
        .stderr
        .wait_for("the log saying why", |l| l.contains("busy"));
}

#[test]
fn a_write_the_database_refuses_gets_500_and_is_rolled_back_whole() {
    let s = setup(&[]);
    let mut other = s.other_process();
    // The user row is written first, then its audit row, which the trigger refuses.
    other
        .query(
            "CREATE TRIGGER refuse_audit BEFORE INSERT ON transactions
             BEGIN SELECT RAISE(ABORT, 'injected: audit rows refused'); END",
            &[],
        )
        .expect("trigger");
    let before = common::dump(&s.server.db);

    let (st, body) = s.post(
        "/admin/api/quota/users/alice",
        r#"{"action":"add","amount":5}"#,
        &[("X-Request-Id", "req-5xx-audit-1")],
    );
    assert_eq!(st, 500, "{body}");
    assert_eq!(json(&body)["error"], "Internal error (see the server log)");
    // Its access line is at ERROR and names the request's id (the client's, here).
    s.server.stderr.wait_for("the 500's access line at ERROR", |l| {
        l.contains("ERROR")
            && l.contains("access")
            && l.contains("status=500")
            && l.contains("req-5xx-audit-1")
    });
    assert_eq!(
        common::dump(&s.server.db),
        before,
        "the user row was kept without its audit row"
    );
    // The line is written before the answer; wait for the reader of the server's stderr to see it.
    s.server.stderr.wait_for("the refused write in the log", |l| {
        l.contains("constraint violated") && l.contains("injected: audit rows refused")
    });

    other.query("DROP TRIGGER refuse_audit", &[]).expect("drop");
    let (st, body) = s.post(
        "/admin/api/quota/users/alice",
        r#"{"action":"add","amount":5}"#,
        &[],
    );
    assert_eq!((st, json(&body)["balance"].as_i64()), (200, Some(105)), "{body}");
}

#[test]
fn a_failing_idempotency_record_rolls_back_the_change_it_describes() {
    let s = setup(&[]);
    let mut other = s.other_process();
    other
        .query(
            "CREATE TRIGGER refuse_replays BEFORE INSERT ON idempotency
             BEGIN SELECT RAISE(ABORT, 'injected: replay records refused'); END",
            &[],
        )
        .expect("trigger");
    let before = common::dump(&s.server.db);
    let key = [("Idempotency-Key", "k-1")];
    let body = r#"{"action":"add","amount":7}"#;

    let (st, b) = s.post("/admin/api/quota/users/alice", body, &key);
    assert_eq!(st, 500, "{b}");
    assert_eq!(
        common::dump(&s.server.db),
        before,
        "the change was kept without its replay record"
    );

    other.query("DROP TRIGGER refuse_replays", &[]).expect("drop");
    let (st, first) = s.post("/admin/api/quota/users/alice", body, &key);
    assert_eq!(
        (st, json(&first)["balance"].as_i64()),
        (200, Some(107)),
        "{first}"
    );
    let (st, again) = s.post("/admin/api/quota/users/alice", body, &key);
    assert_eq!(
        (st, again),
        (200, first),
        "the retry is replayed, not applied again"
    );
}
