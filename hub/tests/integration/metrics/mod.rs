//! `GET {base}/metrics`: after a scripted set of gates, refusals, bad starts, ends, a cleanup and
//! refreshes, the scraped counters equal what happened. The exposition is parsed with a strict
//! OpenMetrics parser (never grepped); refusals are their own series; a dry run, a replayed run id
//! and a replayed Idempotency-Key count nothing; only an administrator or a `quota:metrics` token
//! may read it.

use crate::common;
mod rules;

use std::collections::BTreeMap;

use common::metrics::{family, get, parse};
use common::{http, json};

const T0: &str = "2026-06-01T10:00:00Z";
const T10: &str = "2026-06-01T10:10:00Z";
const T9H: &str = "2026-06-01T19:00:00Z";

#[test]
fn scraped_counters_equal_what_happened() {
    let setup = common::with_values(serde_json::json!({"custom": {
        "authMode": "github",
        "quota": {
            "enabled": true, "cpuRate": 1, "minimumToStart": 10, "defaultQuota": 100,
            "refreshRules": {"weekly-topup": {"enabled": true, "schedule": "0 6 * * 1",
                                               "action": "add", "amount": 200}}
        },
        "accelerators": {"phx": {"quotaRate": 2}, "gpu": {"quotaRate": 4.5}}
    }}));
    let server = setup.start(&["--test-clock", "--no-scheduler"]);
    let admin = setup.token("root", true, &[]);
    let hub = setup.token("hub", false, &["quota:sessions"]);
    let scraper = setup.token("prometheus", false, &["quota:metrics"]);
    let agent = common::agent();
    let url = |p: &str| format!("{}{p}", server.url);
    let post = |token: &str, path: &str, body: &str, at: &str| {
        http(
            &agent,
            "POST",
            &url(path),
            Some(token),
            Some(body),
            &[("X-Quota-Test-Now", at)],
        )
    };
    let start = |user: &str, server_name: &str, resource: &str, minutes: i64| {
        let resource = match resource {
            "" => serde_json::Value::Null,
            r => r.into(),
        };
        let body = serde_json::json!({"username": user, "server_name": server_name,
                                      "resource_type": resource, "runtime_minutes": minutes});
        post(&hub, "/api/quota/sessions", &body.to_string(), T0)
    };
    let scrape = || {
        let (status, text) = http(&agent, "GET", &url("/metrics"), Some(&scraper), None, &[]);
        assert_eq!(status, 200, "{text}");
        parse(&text)
    };

    // Who may read it.
    let (status, _) = http(&agent, "GET", &url("/metrics"), None, None, &[]);
    assert_eq!(status, 401);
    let (status, body) = http(&agent, "GET", &url("/metrics"), Some(&hub), None, &[]);
    assert_eq!(status, 403, "{body}");
    let (status, body) = http(&agent, "GET", &url("/metrics"), Some(&admin), None, &[]);
    assert_eq!(status, 200, "{body}");
    let (status, _) = http(&agent, "POST", &url("/metrics"), Some(&admin), Some("{}"), &[]);
    assert_eq!(status, 405);
    let before = scrape();
    assert!(family(&before, "quota_gate_decisions").is_empty(), "{before:?}");

    assert_eq!(
        post(
            &admin,
            "/admin/api/quota/users/alice",
            r#"{"action":"set","amount":1000}"#,
            T0
        )
        .0,
        200
    );
    assert_eq!(
        post(
            &admin,
            "/admin/api/quota/users/bob",
            r#"{"action":"set","amount":5}"#,
            T0
        )
        .0,
        200
    );

    // Allowed: three phx servers, one CPU server, one GPU server.
    let mut ids = BTreeMap::new();
    for (name, resource) in [
        ("s1", "phx"),
        ("s2", "phx"),
        ("s3", "phx"),
        ("c1", ""),
        ("g1", "gpu"),
    ] {
        let (status, body) = start("alice", name, resource, 30);
        assert_eq!(status, 201, "{body}");
        ids.insert(name, json(&body)["session_id"].as_i64().expect("id"));
    }
    // Refused (not enough credits): twice.
    for name in ["b1", "b2"] {
        let (status, body) = start("bob", name, "phx", 30);
        assert_eq!(status, 403, "{body}");
    }
    // Invalid: an unknown resource (labelled other), a runtime out of range, a body without a user.
    assert_eq!(start("alice", "x1", "tpu", 30).0, 400);
    assert_eq!(start("alice", "x2", "phx", 0).0, 400);
    assert_eq!(
        post(&hub, "/api/quota/sessions", r#"{"runtime_minutes": 5}"#, T0).0,
        400
    );
    // A start replayed with its Idempotency-Key is one decision.
    let body = r#"{"username":"carol","server_name":"k","resource_type":"phx","runtime_minutes":10}"#;
    for _ in 0..2 {
        let (status, answer) = http(
            &agent,
            "POST",
            &url("/api/quota/sessions"),
            Some(&hub),
            Some(body),
            &[("X-Quota-Test-Now", T0), ("Idempotency-Key", "carol-k")],
        );
        assert_eq!(status, 201, "{answer}");
    }

    let mid = scrape();
    assert_eq!(
        family(&mid, "quota_gate_decisions"),
        BTreeMap::from([
            ("resource_type=cpu,result=allowed".to_string(), 1.0),
            ("resource_type=gpu,result=allowed".to_string(), 1.0),
            ("resource_type=other,result=invalid".to_string(), 2.0),
            ("resource_type=phx,result=allowed".to_string(), 4.0),
            ("resource_type=phx,result=invalid".to_string(), 1.0),
            ("resource_type=phx,result=refused".to_string(), 2.0),
        ])
    );
    assert_eq!(
        family(&mid, "quota_sessions_active"),
        BTreeMap::from([
            ("resource_type=cpu".to_string(), 1.0),
            ("resource_type=gpu".to_string(), 1.0),
            ("resource_type=phx".to_string(), 4.0),
        ])
    );
    // Requests: the route template, never an id or a name.
    let starts = |status: &str| {
        get(
            &mid,
            "quota_http_requests",
            &format!("method=POST,route=/api/quota/sessions,status={status}"),
        )
    };
    assert_eq!((starts("201"), starts("403"), starts("400")), (7.0, 2.0, 3.0));
    assert_eq!(
        get(
            &mid,
            "quota_http_request_duration_seconds",
            "method=POST,route=/api/quota/sessions,status=201"
        ),
        7.0
    );
    assert_eq!(get(&mid, "quota_engine_traps", ""), 0.0);

    // Ends: s1 and s2 after 10 minutes (2/min: 20 each), c1 after 10 (1/min: 10); s1 twice (the
    // second end changes nothing, so it is no second end).
    for name in ["s1", "s2", "c1", "s1"] {
        let (status, body) = post(&hub, &format!("/api/quota/sessions/{}/end", ids[name]), "{}", T10);
        assert_eq!(status, 200, "{body}");
    }
    // Cleanup nine hours on: s3, g1 and carol's k (cleaned up, charged nothing).
    let (status, body) = post(&admin, "/admin/api/quota/cleanup", "{}", T9H);
    assert_eq!(status, 200, "{body}");
    assert_eq!(json(&body)["cleaned"], 3, "{body}");

    // Refreshes: the configured rule, a rule name the setup.values file does not have, no rule name, a
    // dry run and a replayed run id (neither counted).
    let refresh = |body: &str| {
        let (status, answer) = post(&admin, "/admin/api/quota/refresh", body, T9H);
        assert_eq!(status, 200, "{answer}");
        json(&answer)["users_updated"].as_f64().expect("users_updated")
    };
    let weekly = refresh(r#"{"rule_name":"weekly-topup","action":"add","amount":200,"run_id":"w1"}"#);
    assert_eq!(
        refresh(r#"{"rule_name":"weekly-topup","action":"add","amount":200,"run_id":"w1"}"#),
        weekly
    );
    let adhoc =
        refresh(r#"{"rule_name":"adhoc","action":"add","amount":1,"targets":{"includeUsers":["bob"]}}"#);
    let manual = refresh(r#"{"action":"add","amount":3}"#);
    refresh(r#"{"action":"add","amount":3,"dry_run":true}"#);
    assert_eq!((weekly, adhoc, manual), (3.0, 1.0, 3.0));

    let end = scrape();
    assert_eq!(
        family(&end, "quota_session_ends"),
        BTreeMap::from([
            ("resource_type=cpu,status=completed".to_string(), 1.0),
            ("resource_type=gpu,status=cleaned_up".to_string(), 1.0),
            ("resource_type=phx,status=cleaned_up".to_string(), 2.0),
            ("resource_type=phx,status=completed".to_string(), 2.0),
        ])
    );
    assert_eq!(
        family(&end, "quota_credits_charged"),
        BTreeMap::from([
            ("resource_type=cpu".to_string(), 10.0),
            ("resource_type=gpu".to_string(), 0.0),
            ("resource_type=phx".to_string(), 40.0),
        ])
    );
    assert!(
        family(&end, "quota_sessions_active").values().all(|v| *v == 0.0),
        "{end:?}"
    );
    assert_eq!(
        family(&end, "quota_refresh_runs"),
        BTreeMap::from([
            ("rule=manual".to_string(), 1.0),
            ("rule=other".to_string(), 1.0),
            ("rule=weekly-topup".to_string(), 1.0),
        ])
    );
    assert_eq!(
        family(&end, "quota_refresh_users_updated"),
        BTreeMap::from([
            ("rule=manual".to_string(), manual),
            ("rule=other".to_string(), adhoc),
            ("rule=weekly-topup".to_string(), weekly),
        ])
    );
    // Gate counts did not move after the ends.
    assert_eq!(
        family(&end, "quota_gate_decisions"),
        family(&mid, "quota_gate_decisions")
    );
    // The scrapes themselves are requests too.
    assert_eq!(
        get(
            &end,
            "quota_http_requests",
            "method=GET,route=/metrics,status=200"
        ),
        3.0
    );
    assert_eq!(
        get(
            &end,
            "quota_http_requests",
            "method=POST,route=/api/quota/sessions/{id}/end,status=200"
        ),
        4.0
    );
    assert_eq!(get(&end, "quota_storage_busy", ""), 0.0);
    server.stop();
}

#[test]
fn budgets_balances_and_charges_are_exported() {
    let setup = common::with_values(serde_json::json!({"custom": {
        "authMode": "github",
        "quota": {"cpuRate": 1, "minimumToStart": 1, "defaultQuota": 0,
                  "budgets": {"lab": {"users": ["ann"]}, "course": {"users": ["bob"]}}}
    }}));
    let server = setup.start(&["--test-clock", "--no-scheduler"]);
    let admin = setup.token("root", true, &[]);
    let hub = setup.token("hub", false, &["quota:sessions"]);
    let agent = common::agent();
    let url = |p: &str| format!("{}{p}", server.url);
    let post = |token: &str, path: &str, body: &str, at: &str| {
        http(
            &agent,
            "POST",
            &url(path),
            Some(token),
            Some(body),
            &[("X-Quota-Test-Now", at)],
        )
    };
    let (st, b) = post(
        &admin,
        "/admin/api/quota/budgets/lab",
        r#"{"action":"set","amount":100}"#,
        T0,
    );
    assert_eq!(st, 200, "{b}");
    let (st, b) = post(
        &hub,
        "/api/quota/sessions",
        r#"{"username":"ann","runtime_minutes":30,"budget":"lab"}"#,
        T0,
    );
    assert_eq!(st, 201, "{b}");
    let id = json(&b)["session_id"].as_i64().expect("id");
    let (st, b) = post(&hub, &format!("/api/quota/sessions/{id}/end"), "{}", T10);
    assert_eq!(st, 200, "{b}");
    let (status, text) = http(
        &agent,
        "GET",
        &url("/metrics"),
        Some(&admin),
        None,
        &[("X-Quota-Test-Now", T10)],
    );
    assert_eq!(status, 200, "{text}");
    let m = parse(&text);
    assert_eq!(
        family(&m, "quota_budget_credits_charged"),
        BTreeMap::from([("budget=lab".to_string(), 10.0)])
    );
    assert_eq!(
        family(&m, "quota_budget_balance"),
        BTreeMap::from([
            ("budget=course".to_string(), 0.0),
            ("budget=lab".to_string(), 90.0)
        ])
    );
    server.stop();
}
