//! The refresh rules' last runs, `quota_build_info` and the process series; a server without
//! metrics.

use super::*;

#[test]
fn the_refresh_rules_runs_the_build_and_the_process_are_exported() {
    let setup = common::with_values(
        serde_json::json!({"custom": {"authMode": "github", "quota": {"refreshRules": {
            "weekly-topup": {"enabled": true, "schedule": "0 6 * * 1", "action": "add", "amount": 5},
            "hourly": {"enabled": true, "schedule": "0 * * * *", "action": "add", "amount": 1},
            "off": {"enabled": false, "schedule": "* * * * *", "action": "add", "amount": 1}}}}}),
    );
    let server = setup.start(&["--test-clock", "--no-scheduler"]);
    let admin = setup.token("root", true, &[]);
    let agent = common::agent();
    // Monday 2026-06-01, 10:30 UTC: weekly-topup last fired at 06:00, hourly at 10:00.
    let now = "2026-06-01T10:30:00Z";
    let at = |t: &str| quota_core::Timestamp::parse(t).expect("time").seconds() as f64;
    let scrape = || {
        let (status, text) = http(
            &agent,
            "GET",
            &format!("{}/metrics", server.url),
            Some(&admin),
            None,
            &[("X-Quota-Test-Now", now)],
        );
        assert_eq!(status, 200, "{text}");
        parse(&text)
    };
    let runs = scrape();
    assert_eq!(
        family(&runs, "quota_refresh_last_scheduled_timestamp_seconds"),
        BTreeMap::from([
            ("rule=hourly".to_string(), at("2026-06-01T10:00:00Z")),
            ("rule=weekly-topup".to_string(), at("2026-06-01T06:00:00Z")),
        ])
    );
    assert!(
        family(&runs, "quota_refresh_last_run_applied")
            .values()
            .all(|v| *v == 0.0),
        "{runs:?}"
    );
    assert!(family(&runs, "quota_refresh_last_success_timestamp_seconds").is_empty());

    // A CronJob applies weekly-topup's run and an older hourly one (the 10:00 run was missed).
    for (rule, run) in [
        ("weekly-topup", "2026-06-01T06:00:00Z"),
        ("hourly", "2026-06-01T09:00:00Z"),
    ] {
        let body = format!(r#"{{"rule_name":"{rule}","action":"add","amount":1,"run_id":"{rule}@{run}"}}"#);
        let (status, answer) = http(
            &agent,
            "POST",
            &format!("{}/admin/api/quota/refresh", server.url),
            Some(&admin),
            Some(&body),
            &[("X-Quota-Test-Now", now)],
        );
        assert_eq!(status, 200, "{answer}");
    }
    let runs = scrape();
    assert_eq!(
        family(&runs, "quota_refresh_last_run_applied"),
        BTreeMap::from([
            ("rule=hourly".to_string(), 0.0),
            ("rule=weekly-topup".to_string(), 1.0)
        ])
    );
    assert_eq!(
        family(&runs, "quota_refresh_last_success_timestamp_seconds"),
        BTreeMap::from([
            ("rule=hourly".to_string(), at("2026-06-01T09:00:00Z")),
            ("rule=weekly-topup".to_string(), at("2026-06-01T06:00:00Z")),
        ])
    );
    assert_eq!(
        family(&runs, "quota_build"),
        BTreeMap::from([(
            format!(
                "revision={},version={}",
                option_env!("QUOTA_BUILD_REVISION").unwrap_or("unknown"),
                env!("CARGO_PKG_VERSION")
            ),
            1.0
        )])
    );
    for name in [
        "process_resident_memory_bytes",
        "process_start_time_seconds",
        "process_open_fds",
        "process_threads",
    ] {
        assert!(get(&runs, name, "") > 0.0, "{name}: {runs:?}");
    }
    assert!(
        runs.contains_key(&("process_cpu_seconds".to_string(), String::new())),
        "{runs:?}"
    );
    server.stop();
}

#[test]
fn no_metrics_serves_no_metrics_and_everything_else() {
    let setup = common::example();
    let server = setup.start(&["--no-metrics"]);
    let admin = setup.token("root", true, &[]);
    let (status, body) = server.get("/metrics", &admin);
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("--no-metrics"), "{body}");
    let (status, body) = server.post(
        "/admin/api/quota/users/alice",
        &admin,
        r#"{"action":"set","amount":5}"#,
    );
    assert_eq!(status, 200, "{body}");
    server.stop();
}

/// What the scheduled backups did and how far Litestream's replica is behind (issue 59): a backup
/// into the folder `--backup-dir` names, then one that fails, each read at the next scrape; with
/// `--litestream-socket` and no Litestream answering, the lag grows from the server's start.
#[test]
fn the_backups_and_the_replicas_lag_are_exported() {
    let setup = common::example();
    let admin = setup.token("root", true, &[]);
    let dir = setup.dir.path().join("backups");
    let db = format!("sqlite://{}", setup.db.display());
    let values = setup.values.to_str().expect("path").to_string();
    let backup = |db: &str| {
        common::cli(&[
            "backup",
            "--db",
            db,
            "--values",
            &values,
            "-o",
            &format!("{}/", dir.display()),
        ])
    };
    let socket = setup.dir.path().join("litestream.sock");
    let server = setup.start(&[
        "--test-clock",
        "--backup-dir",
        dir.to_str().expect("path"),
        "--litestream-socket",
        socket.to_str().expect("path"),
    ]);
    // Taken while the server serves, as the backup CronJob does.
    assert_eq!(backup(&db).0, 0, "a backup");
    let agent = common::agent();
    let scrape = |now: &str| {
        let (status, text) = http(
            &agent,
            "GET",
            &format!("{}/metrics", server.url),
            Some(&admin),
            None,
            &[("X-Quota-Test-Now", now)],
        );
        assert_eq!(status, 200, "{text}");
        parse(&text)
    };
    let state: serde_json::Value =
        json(&std::fs::read_to_string(dir.join("backup-state.json")).expect("the state"));
    let m = scrape("2099-01-01T00:00:00Z");
    assert_eq!(
        get(&m, "quota_backup_last_success_timestamp_seconds", ""),
        state["last_success"].as_f64().expect("a success")
    );
    assert!(get(&m, "quota_backup_bytes", "") > 4096.0);
    assert_eq!(get(&m, "quota_backup_failures", ""), 0.0);
    assert!(
        get(&m, "quota_replication_lag_seconds", "") > 365.0 * 86400.0,
        "nothing answers: behind since the server started"
    );
    // A failed backup is counted, never only a log line.
    let missing = format!("sqlite://{}", setup.dir.path().join("gone.db").display());
    assert_ne!(backup(&missing).0, 0);
    let m = scrape("2099-01-01T00:00:10Z");
    assert_eq!(get(&m, "quota_backup_failures", ""), 1.0);
    let (code, listed, err) = common::cli(&["backups", dir.to_str().expect("path")]);
    assert_eq!(code, 0, "{err}");
    assert!(
        listed.contains("1 backup(s)") && listed.contains("1 failure(s)") && listed.contains("no such file"),
        "{listed}"
    );
    server.stop();
}
