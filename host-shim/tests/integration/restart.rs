//! A session started by one host process is ended correctly by a new process on the same file:
//! sessions live in storage, not in a process's memory. Each step is a separate process: this test
//! binary again, running only `child_process_step` with the request in its environment.

use crate::common;

use std::process::Command;

const STEP_VAR: &str = "QUOTA_RESTART_STEP";

fn quota_call(
    db: &std::path::Path,
    values: &std::path::Path,
    who: &str,
    now: &str,
    args: &[&str],
) -> (u16, serde_json::Value) {
    let step = serde_json::json!({
        "db": db, "values": values, "who": who, "now": now, "args": args,
    });
    let out = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "restart::child_process_step",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(STEP_VAR, step.to_string())
        .output()
        .expect("child process runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "step {args:?} failed: {}{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer = stdout
        .lines()
        .find_map(|l| l.split_once("STEP-ANSWER ").map(|(_, a)| a))
        .unwrap_or_else(|| panic!("no answer from the child: {stdout}"));
    let (status, body) = answer.split_once(' ').expect("STATUS BODY");
    (
        status.parse().expect("status"),
        serde_json::from_str(body).expect("JSON"),
    )
}

/// The child side of [`quota_call`]: one request through a new worker over the file, printed. In
/// the ordinary test run (no step in the environment) it does nothing.
#[test]
fn child_process_step() {
    let Ok(step) = std::env::var(STEP_VAR) else {
        return;
    };
    let step: serde_json::Value = serde_json::from_str(&step).expect("step");
    let text = |k: &str| step[k].as_str().expect(k).to_string();
    let mut who = text("who")
        .split(',')
        .map(str::to_string)
        .collect::<Vec<_>>()
        .into_iter();
    let name = who.next().expect("name");
    let rest: Vec<String> = who.collect();
    let caller = quota_core::Caller {
        name,
        admin: rest.iter().any(|r| r == "admin"),
        scopes: rest.into_iter().filter(|r| r != "admin").collect(),
    };
    let args: Vec<String> = step["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("arg").to_string())
        .collect();
    let db = quota_host::SqliteDb::open(
        &common::runtime(),
        std::path::Path::new(&text("db")),
        quota_host::SqliteOptions::default(),
    )
    .expect("open");
    let values = std::fs::read_to_string(text("values")).expect("values");
    let mut w = quota_host::Worker::new(common::runtime(), Box::new(db), &values).expect("worker");
    let now = quota_core::Timestamp::parse(&text("now")).expect("now");
    let req = quota_core::Request {
        method: &args[0],
        path: &args[1],
        query: "",
        body: args.get(2).map_or("", String::as_str),
        caller: Some(&caller),
    };
    let r = w.handle_request(&req, now).expect("request");
    println!("STEP-ANSWER {} {}", r.status, r.body);
}

#[test]
fn a_session_started_by_one_process_is_ended_by_another() {
    let dir = tempfile::tempdir().expect("dir");
    let (db, values) = (dir.path().join("quota.db"), dir.path().join("values.json"));
    std::fs::write(&values, common::fixture_json()).expect("values");
    let t0 = "2026-11-22T10:00:00Z";

    let (s, b) = quota_call(
        &db,
        &values,
        "root,admin",
        t0,
        &[
            "POST",
            "/admin/api/quota/users/alice",
            r#"{"action":"set","amount":100}"#,
        ],
    );
    assert_eq!((s, b["balance"].as_i64()), (200, Some(100)), "{b}");
    let (s, b) = quota_call(
        &db,
        &values,
        "hub,quota:sessions",
        t0,
        &[
            "POST",
            "/api/quota/sessions",
            r#"{"username":"alice","resource_type":"dgpu","runtime_minutes":10,"server_name":"gpu"}"#,
        ],
    );
    assert_eq!(s, 201, "{b}");
    let id = b["session_id"].as_i64().expect("id");

    // A new process ends it by id, 7 minutes later: 7 x 4 = 28.
    let (s, b) = quota_call(
        &db,
        &values,
        "hub,quota:sessions",
        "2026-11-22T10:07:30Z",
        &["POST", &format!("/api/quota/sessions/{id}/end"), "{}"],
    );
    assert_eq!(
        (
            s,
            b["duration_minutes"].as_i64(),
            b["cost"].as_i64(),
            b["balance"].as_i64()
        ),
        (200, Some(7), Some(28), Some(72)),
        "{b}"
    );

    // Another start, ended by (username, server name) from yet another process.
    let (s, _) = quota_call(
        &db,
        &values,
        "hub,quota:sessions",
        "2026-11-22T11:00:00Z",
        &[
            "POST",
            "/api/quota/sessions",
            r#"{"username":"alice","runtime_minutes":10,"server_name":"gpu"}"#,
        ],
    );
    assert_eq!(s, 201);
    let (s, b) = quota_call(
        &db,
        &values,
        "hub,quota:sessions",
        "2026-11-22T11:03:00Z",
        &[
            "POST",
            "/api/quota/sessions/end",
            r#"{"username":"alice","server_name":"gpu"}"#,
        ],
    );
    assert_eq!(
        (s, b["cost"].as_i64(), b["balance"].as_i64()),
        (200, Some(3), Some(69)),
        "{b}"
    );

    // Ending again from a fresh process is idempotent: no second charge.
    let (s, b) = quota_call(
        &db,
        &values,
        "hub,quota:sessions",
        "2026-11-22T12:00:00Z",
        &["POST", &format!("/api/quota/sessions/{id}/end"), "{}"],
    );
    assert_eq!(
        (s, b["cost"].as_i64(), b["balance"].as_i64()),
        (200, Some(28), Some(69)),
        "{b}"
    );
    let (_, b) = quota_call(
        &db,
        &values,
        "root,admin",
        "2026-11-22T12:00:00Z",
        &["GET", "/admin/api/quota/transactions"],
    );
    let kinds: Vec<&str> = b["transactions"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|t| t["transaction_type"].as_str())
        .collect();
    assert_eq!(kinds, ["set", "usage", "usage"]);
}
