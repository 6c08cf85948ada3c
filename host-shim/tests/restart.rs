//! A session started by one host process is ended correctly by a new process on the same file:
//! sessions live in storage, not in a process's memory. Each step is a separate `quota-call` process.

mod common;

use std::process::Command;

fn quota_call(
    db: &std::path::Path,
    values: &std::path::Path,
    who: &str,
    now: &str,
    args: &[&str],
) -> (u16, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_quota-call"))
        .args([
            "--db",
            &db.to_string_lossy(),
            "--values",
            &values.to_string_lossy(),
            "--as",
            who,
            "--now",
            now,
        ])
        .args([
            "--component",
            &common::workspace()
                .join(quota_host::component_path)
                .to_string_lossy(),
        ])
        .args(args)
        .output()
        .expect("quota-call runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "quota-call {args:?} failed: {}{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (status, body) = stdout.trim().split_once(' ').expect("STATUS BODY");
    (
        status.parse().expect("status"),
        serde_json::from_str(body).expect("JSON"),
    )
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
