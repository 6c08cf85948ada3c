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
