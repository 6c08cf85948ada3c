//! `GET {base}/healthz` and `GET {base}/readyz` against real databases: unauthenticated, out of
//! the access log unless `--log-probes`; `readyz` is 503 with the reason while another process
//! holds the SQLite file's write lock, while the file holds another schema version (the check
//! changes nothing), and while PostgreSQL is stopped; it is 200 again once the cause is gone
//! (a stopped PostgreSQL restarted: the workers connect again and writes go through).

use crate::common;

use common::{http, json, Server};

fn setup(extra: &[&str]) -> (tempfile::TempDir, Server) {
    let common::Setup { dir, db, values } =
        common::with_values(serde_json::json!({"custom": {"authMode": "github"}}));
    let server = Server::start(&db, &values, extra);
    (dir, server)
}

fn probe(server: &Server, path: &str) -> (u16, serde_json::Value) {
    let (st, body) = http(
        &common::agent(),
        "GET",
        &format!("{}{path}", server.url),
        None,
        None,
        &[],
    );
    (st, json(&body))
}

#[test]
fn the_probes_answer_without_a_token_and_stay_out_of_the_access_log() {
    let (_dir, server) = setup(&[]);
    assert_eq!(
        probe(&server, "/healthz"),
        (200, serde_json::json!({"status": "ok"}))
    );
    assert_eq!(
        probe(&server, "/readyz"),
        (200, serde_json::json!({"status": "ready", "schema_version": 12}))
    );
    let (st, _) = server.call("POST", "/readyz", None, Some("{}"));
    assert_eq!(st, 405);
    // A user request after them: its line is there, the probes' are not.
    let (st, _) = server.call("GET", "/api/quota/rates", None, None);
    assert_eq!(st, 401);
    let stderr = server.stderr.clone();
    stderr.wait_for("for the user request", |l| l.contains("/api/quota/rates"));
    assert!(
        !stderr
            .all()
            .iter()
            .any(|l| l.contains("/healthz") || l.contains("/readyz")),
        "{:?}",
        stderr.all()
    );

    let (_dir2, logged) = setup(&["--log-probes"]);
    assert_eq!(probe(&logged, "/healthz").0, 200);
    logged
        .stderr
        .wait_for("for the probe", |l| l.contains("GET") && l.contains("/healthz"));
}

#[test]
fn readyz_is_503_while_another_process_holds_the_files_write_lock() {
    let (_dir, server) = setup(&["--busy-timeout-ms", "300"]);
    let (st, body) = probe(&server, "/readyz");
    assert_eq!(st, 200, "{body}");
    // Another process (a stuck `sqlite3` shell, a backup tool) holding the write lock: this
    // server's writes wait for it, then fail. Whether the server's writer is idle at the probe
    // (the lock is tried) or stuck behind the lock (its failure is remembered), the probe says so
    // once the writer has had its turn.
    let holder = rusqlite::Connection::open(&server.db).expect("open");
    holder
        .execute_batch("BEGIN IMMEDIATE")
        .expect("take the write lock");
    let locked = serde_json::json!({"status": "not ready",
        "error": "another process holds the database's write lock: writes wait for it, then fail with 503"});
    common::eventually("readyz to see the lock", || {
        probe(&server, "/readyz") == (503, locked.clone())
    });
    assert_eq!(probe(&server, "/healthz").0, 200, "the process is up");
    holder.execute_batch("ROLLBACK").expect("release");
    common::eventually("readyz to be 200 once the lock is gone", || {
        probe(&server, "/readyz").0 == 200
    });
}

/// `/readyz`, asked again while a write holds the database's lock for a moment (the version the
/// test just stamped, or the server's own sweep on a loaded machine: CI saw it once): readyz
/// reports the lock before the schema, and the lock passes.
fn readyz_past_lock(server: &Server) -> (u16, serde_json::Value) {
    let last = std::cell::RefCell::new((0, serde_json::Value::Null));
    common::eventually("readyz past a passing write lock", || {
        let r = probe(server, "/readyz");
        let locked = r.1["error"]
            .as_str()
            .is_some_and(|e| e.contains("locked by another process"));
        *last.borrow_mut() = r;
        !locked
    });
    last.into_inner()
}

#[test]
fn readyz_names_a_schema_version_this_binary_does_not_write_and_changes_nothing() {
    let (_dir, server) = setup(&[]);
    let set_version = |v: i64| {
        let c = rusqlite::Connection::open(&server.db).expect("open");
        c.pragma_update(None, "user_version", v).expect("set version");
    };
    let version = || -> i64 {
        let c = rusqlite::Connection::open(&server.db).expect("open");
        c.pragma_query_value(None, "user_version", |r| r.get(0))
            .expect("version")
    };
    set_version(99);
    let (st, body) = readyz_past_lock(&server);
    assert_eq!(st, 503, "{body}");
    assert!(
        body["error"]
            .as_str()
            .expect("reason")
            .contains("schema version 99"),
        "{body}"
    );
    // A current file stamped back to version 2 (a real one would migrate; this one cannot, as
    // its tables are already newer): not ready, saying both versions, nothing changed.
    let exec = |sql: &str| {
        let c = rusqlite::Connection::open(&server.db).expect("open");
        c.execute_batch(sql).expect(sql);
    };
    exec("ALTER TABLE quota_schema RENAME TO kept_quota_schema");
    set_version(2);
    let (st, body) = readyz_past_lock(&server);
    assert_eq!(st, 503, "{body}");
    assert!(
        body["error"]
            .as_str()
            .expect("reason")
            .contains("the database has schema version 2, this engine writes version 12"),
        "{body}"
    );
    assert_eq!(version(), 2, "the check migrated nothing");
    exec("ALTER TABLE kept_quota_schema RENAME TO quota_schema");
    set_version(9);
    assert_eq!(probe(&server, "/readyz").0, 200);
}

#[cfg(feature = "pg-tests")]
#[test]
fn readyz_follows_a_postgresql_server_that_stops_and_starts_again() {
    use quota_host::pg::PgDb;
    use quota_host::Database;

    let url = std::env::var("QUOTA_TEST_PG_URL")
        .expect("QUOTA_TEST_PG_URL: run this test through scripts/with-postgres.sh");
    let ctl = |what: &str| {
        let cmd =
            std::env::var(what).unwrap_or_else(|_| panic!("{what}: run through scripts/with-postgres.sh"));
        let st = std::process::Command::new("sh")
            .args(["-c", &cmd])
            .status()
            .expect("pg_ctl");
        assert!(st.success(), "{cmd}");
    };
    let mut admin = PgDb::connect(&common::runtime(), &url).expect("connect");
    admin
        .query("DROP DATABASE IF EXISTS quota_health WITH (FORCE)", &[])
        .expect("drop");
    admin.query("CREATE DATABASE quota_health", &[]).expect("create");
    drop(admin);
    let db_url = format!("{}/quota_health", url.rsplit_once('/').expect("db").0);
    let dir = tempfile::tempdir().expect("dir");
    let values = common::write_values(
        dir.path(),
        "values.json",
        &serde_json::json!({"custom": {"authMode": "github"}}),
    );
    let token = common::token_url(&db_url, "root", true, &[], &[]);
    let server = Server::start_url(&db_url, &values, &[], &[]);
    assert_eq!(probe(&server, "/readyz").0, 200);

    ctl("QUOTA_TEST_PG_STOP");
    let (st, body) = probe(&server, "/readyz");
    assert_eq!(st, 503, "{body}");
    assert_eq!(body["status"], "not ready");
    assert_eq!(probe(&server, "/healthz").0, 200, "the process is up");

    ctl("QUOTA_TEST_PG_START");
    common::eventually("readyz to be 200 once PostgreSQL is back", || {
        probe(&server, "/readyz").0 == 200
    });
    // The writer reconnected too: a write goes through.
    common::eventually("a write once PostgreSQL is back", || {
        let (st, _) = server.post(
            "/admin/api/quota/users/alice",
            &token,
            r#"{"action":"set","amount":7}"#,
        );
        st == 200
    });
}
