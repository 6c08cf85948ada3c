//! Scheduled refresh through real server processes: a rule fires at its cron time and is applied
//! once, also when two servers share the database; a run missed while no server was up is logged and
//! not replayed. The servers' clocks start just before the fire time (`--clock-start`, which the
//! clock reads at its first reading, after the slow start-up work), so the test waits seconds, not a
//! day, and a server that starts slowly still reaches the fire time from before it: the scheduler
//! runs every fire time after the instant its start-up read. It waits for log lines, never for a
//! fixed time.

use crate::common;

use common::Server;
use serde_json::json;

fn auto_refresh_rows(db: &std::path::Path) -> usize {
    common::dump(db)
        .lines()
        .filter(|l| l.starts_with("transactions|") && l.contains("auto_refresh"))
        .count()
}

#[test]
fn a_rule_fires_once_across_two_servers_and_missed_runs_are_not_replayed() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("q.db");
    let values = common::write_values(
        dir.path(),
        "values.yaml",
        &json!({"custom": {"authMode": "github", "quota": {"refreshRules": {
            "topup": {"enabled": true, "schedule": "0 10 * * *", "action": "add", "amount": 10},
            "off": {"enabled": false, "schedule": "* * * * *", "action": "add", "amount": 1000}
        }}}}),
    );
    let dbarg = format!("--db=sqlite://{}", db.display());
    let (code, _, err) = common::cli_in(
        dir.path(),
        &["set-quota", "alice", "bob", "--amount", "5", &dbarg],
    );
    assert_eq!(code, 0, "{err}");

    let a = Server::start(&db, &values, &["--clock-start", "2026-11-22T09:59:57Z"]);
    let b = Server::start(&db, &values, &["--clock-start", "2026-11-22T09:59:57Z"]);
    let run = "run topup@2026-11-22T10:00:00Z";
    let la = a
        .stderr
        .wait_for("about the 10:00 run from server A", |l| l.contains(run));
    let lb = b
        .stderr
        .wait_for("about the 10:00 run from server B", |l| l.contains(run));
    let applied = [&la, &lb]
        .iter()
        .filter(|l| l.contains("applied: 2 users updated"))
        .count();
    let replayed = [&la, &lb]
        .iter()
        .filter(|l| l.contains("already applied"))
        .count();
    assert_eq!((applied, replayed), (1, 1), "A: {la}\nB: {lb}");
    assert_eq!(auto_refresh_rows(&db), 2, "one auto_refresh row per user");
    assert!(common::dump(&db).contains("users|[\"alice\",15,"));
    // The disabled rule never ran.
    assert!(
        !a.stderr.all().iter().any(|l| l.contains("rule off")),
        "{:?}",
        a.stderr.all()
    );
    a.stop();
    b.stop();

    // Down over the next day's run: a restart after it logs the miss and does not replay it.
    let c = Server::start(&db, &values, &["--clock-start", "2026-11-23T10:30:00Z"]);
    c.stderr.wait_for("about the missed run", |l| {
        l.contains("topup@2026-11-23T10:00:00Z was not applied") && l.contains("not replayed")
    });
    c.stop();
    assert_eq!(auto_refresh_rows(&db), 2, "the missed run was replayed");
}

#[test]
fn a_grant_that_lapsed_while_no_server_ran_is_written_off_before_the_first_request() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("q.db");
    let values = common::write_values(
        dir.path(),
        "values.yaml",
        &json!({"custom": {"authMode": "github", "quota": {}}}),
    );
    let admin = common::token(&db, "root", true, &[]);
    let a = Server::start(&db, &values, &["--clock-start", "2026-11-22T10:00:00Z"]);
    let (st, body) = a.post(
        "/admin/api/quota/users/ann",
        &admin,
        r#"{"action":"add","amount":50,"expires_at":"2026-11-22T12:00:00Z"}"#,
    );
    assert_eq!(st, 200, "{body}");
    a.stop();
    // A day later: the first request already finds the expiry written, dated at the grant's expiry.
    let b = Server::start(&db, &values, &["--clock-start", "2026-11-23T10:00:00Z"]);
    let (st, body) = b.get("/admin/api/quota/transactions?username=ann", &admin);
    assert_eq!(st, 200, "{body}");
    let rows = common::json(&body)["transactions"]
        .as_array()
        .cloned()
        .expect("rows");
    let last = rows.last().expect("a row");
    assert_eq!(
        (
            last["transaction_type"].as_str(),
            last["amount"].as_i64(),
            last["created_at"].as_str(),
            last["created_by"].is_null()
        ),
        (Some("expire"), Some(-50), Some("2026-11-22T12:00:00"), true),
        "{body}"
    );
    assert!(
        b.stderr
            .all()
            .iter()
            .any(|l| l.contains("expired 1 grant(s): 50 credits written off")),
        "the server says what it wrote off"
    );
    b.stop();
}
