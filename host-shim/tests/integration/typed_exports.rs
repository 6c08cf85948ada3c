//! Every typed export of the component, through quota-host's typed façade (core's types in and
//! out), checked against the REST answer (`handle-request`) for the same state, and configuration
//! errors reported with their key paths.

use crate::common;

use quota_core::admin::{AdminAction, AdminRequest, BatchEntry};
use quota_core::gate::{StartDecision, StartRequest};
use quota_core::sessions::{EndRequest, EndTarget, Outcome};
use quota_core::Timestamp;
use quota_core::{Milli, QuotaError};
use quota_host::{HostError, SqliteDb, Worker};
use serde_json::{json, Value};

const T0: Timestamp = Timestamp(1_795_000_000); // 2026-11-18T11:06:40Z

fn values() -> String {
    json!({"custom": {"authMode": "github",
        "quota": {"defaultQuota": 25, "refreshRules": {"nightly": {"enabled": true, "schedule": "0 3 * * *",
            "action": "add", "amount": 5, "maxBalance": 40}}},
        "accelerators": {"phx": {"displayName": "PHX", "description": "d", "nodeSelector": {"accel": "phx"}, "quotaRate": 2.5}}}})
    .to_string()
}

fn rest(w: &mut Worker, method: &str, path: &str) -> Value {
    let (status, body) = common::request(w, &common::admin(), method, path, "", T0);
    assert_eq!(status, 200, "{path}: {body}");
    body
}

#[test]
fn configuration_errors_come_back_with_key_paths_and_leave_the_old_config() {
    let mut w = Worker::new(
        common::runtime(),
        Box::new(SqliteDb::memory(&common::runtime()).expect("memory db")),
        &values(),
    )
    .expect("worker");
    let bad = json!({"custom": {"authMode": "github", "quota": {"cpuRate": "fast", "refreshRules": {"r": {"schedule": "61 * * * *", "amount": 1}}}}});
    match w.configure(&bad.to_string()) {
        Err(HostError::Config(problems)) => {
            let fields: Vec<&str> = problems.iter().map(|(f, _)| f.as_str()).collect();
            assert_eq!(
                fields,
                ["custom.quota.cpuRate", "custom.quota.refreshRules.r.schedule"],
                "{problems:?}"
            );
        }
        other => panic!("expected a config error, got {:?}", other.map(|s| s.enabled)),
    }
    assert!(matches!(w.configure("{not json"), Err(HostError::Config(p)) if p[0].0 == "values"));
    // The previous configuration is still in force.
    let rates = w.rates().expect("rates");
    assert_eq!(rates.rates, json!({"cpu": 1, "phx": 2.5}));
}

#[test]
fn typed_exports_agree_with_the_rest_answers() {
    let mut w = Worker::new(
        common::runtime(),
        Box::new(SqliteDb::memory(&common::runtime()).expect("memory db")),
        &values(),
    )
    .expect("worker");
    let summary = w.summary().clone();
    assert!(summary.enabled);
    assert_eq!(summary.rules.len(), 1);
    assert_eq!(
        (summary.rules[0].name.as_str(), summary.rules[0].schedule.as_str()),
        ("nightly", "0 3 * * *")
    );
    let next = w.next_fire("nightly", T0).expect("next");
    assert_eq!(
        next.map(|t| t.to_string()),
        Some("2026-11-19T03:00:00".to_string())
    );
    assert_eq!(w.next_fire("nope", T0).expect("next"), None);

    // Spawn gate: first start creates the record with the default grant.
    let start = StartRequest {
        username: " Ann ".into(),
        resource: Some("phx".into()),
        runtime_minutes: 4,
        server_name: "gpu".into(),
        started_at: None,
        groups: None,
        budget: None,
    };
    let StartDecision::Allowed(s) = w.check_start(&start, T0).expect("ok") else {
        panic!("refused")
    };
    assert_eq!(
        (
            s.session_id,
            s.rate,
            s.estimated_cost,
            s.balance,
            s.runtime_minutes
        ),
        (1, Milli(2500), Milli(10_000), 25, 4)
    );
    assert_eq!(
        (
            s.username.as_str(),
            s.server_name.as_str(),
            s.resource_type.as_str()
        ),
        ("ann", "gpu", "phx")
    );
    let big = StartRequest {
        runtime_minutes: 60,
        server_name: "other".into(),
        ..start.clone()
    };
    match w.check_start(&big, T0).expect("ok") {
        StartDecision::Refused(r) => {
            assert_eq!(r.message, "Cannot start container: Insufficient quota. Current balance: 25 (10 reserved by running servers), estimated cost: 150 (2.5 quota/min x 60 min). Please contact administrator to add quota.");
            assert_eq!((r.balance, r.held, r.estimated_cost), (25, 10, Milli(150_000)));
        }
        other => panic!("should be refused: {other:?}"),
    }
    let bad = StartRequest {
        runtime_minutes: 0,
        ..start.clone()
    };
    assert!(
        matches!(w.check_start(&bad, T0), Err(HostError::Quota(QuotaError::Invalid { field, .. })) if field == "runtime_minutes")
    );

    // End by (username, server): 3 min x 2.5 = 7.5 -> 8.
    let end = EndRequest {
        target: EndTarget::Server {
            username: "ann".into(),
            server_name: "gpu".into(),
        },
        ended_at: Some(T0.plus_seconds(200)),
        outcome: Outcome::Completed,
    };
    let e = w.end_session(&end, T0).expect("ok");
    assert_eq!(
        (e.session_id, e.duration_minutes, e.cost, e.balance),
        (1, 3, 8, 17)
    );
    assert!(matches!(
        w.end_session(&end, T0),
        Err(HostError::Quota(QuotaError::NotFound(_)))
    ));

    // Admin and batch.
    let set = AdminRequest {
        username: "Bob".into(),
        action: AdminAction::Set(30),
        description: Some("hello".into()),
        expires_at: None,
    };
    let r = w.admin_update(&set, "root", T0).expect("ok");
    assert_eq!(
        (r.username.as_str(), r.balance, r.action, r.amount),
        ("bob", 30, "set", Some(30))
    );
    let deduct = AdminRequest {
        username: "bob".into(),
        action: AdminAction::Deduct(31),
        description: None,
        expires_at: None,
    };
    assert!(matches!(
        w.admin_update(&deduct, "root", T0),
        Err(HostError::Quota(QuotaError::InsufficientBalance))
    ));
    let entries = [
        BatchEntry {
            username: "cy".into(),
            amount: Some(3),
            unlimited: None,
            expires_at: None,
        },
        BatchEntry {
            username: "dee".into(),
            amount: None,
            unlimited: None,
            expires_at: None,
        },
    ];
    let r = w.batch(&entries, "root", T0).expect("ok");
    assert_eq!((r.success, r.failed), (1, 1));
    assert_eq!(r.details[1].status, "failed");

    // Refresh by body and by configured rule (at most once per run id).
    let r = w
        .refresh(
            r#"{"action":"add","amount":1,"targets":{"includeUsers":["cy"]}}"#,
            T0,
        )
        .expect("ok");
    assert_eq!(
        (r.users_updated, r.total_change, r.skipped, r.action.as_str()),
        (1, 1, 2, "add")
    );
    let bad = w.refresh(r#"{"action":"add","amount":1,"target":{}}"#, T0);
    assert!(matches!(bad, Err(HostError::Quota(QuotaError::Invalid { field, .. })) if field == "target"));
    let first = w
        .run_rule("nightly", Some("nightly@2026-11-19T03:00:00Z"), false, T0)
        .expect("ok");
    assert!(!first.replayed);
    assert_eq!((first.users_updated, first.total_change), (3, 15)); // ann 17->22, bob 30->35, cy 4->9
    let again = w
        .run_rule("nightly", Some("nightly@2026-11-19T03:00:00Z"), false, T0)
        .expect("ok");
    assert!(again.replayed);
    assert_eq!(
        (again.users_updated, again.total_change),
        (first.users_updated, first.total_change),
        "a replayed run answers the first result"
    );
    assert!(w.run_applied("nightly@2026-11-19T03:00:00Z").expect("applied"));
    assert!(!w.run_applied("nightly@2026-11-20T03:00:00Z").expect("applied"));
    assert!(matches!(
        w.run_rule("nope", None, false, T0),
        Err(HostError::Quota(QuotaError::NotFound(_)))
    ));

    // Reads agree with REST.
    let users = w.list_users(T0).expect("ok");
    let rest_users = rest(&mut w, "GET", "/admin/api/quota/");
    let pairs: Vec<(String, i64)> = users.iter().map(|u| (u.username.clone(), u.balance)).collect();
    let rest_pairs: Vec<(String, i64)> = rest_users["users"]
        .as_array()
        .expect("list")
        .iter()
        .map(|u| {
            (
                u["username"].as_str().unwrap_or_default().to_string(),
                u["balance"].as_i64().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(pairs, rest_pairs);
    assert_eq!(
        pairs,
        [("ann".to_string(), 22), ("bob".into(), 35), ("cy".into(), 9)]
    );

    let d = w.user_detail("ann", T0).expect("ok");
    let rest_d = rest(&mut w, "GET", "/admin/api/quota/users/ann");
    let ids: Vec<i64> = d.recent_transactions.iter().map(|t| t.id).collect();
    let rest_ids: Vec<i64> = rest_d["recent_transactions"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|t| t["id"].as_i64())
        .collect();
    assert_eq!(ids, rest_ids);
    assert_eq!(d.recent_transactions.len(), 3, "grant, usage, refresh");

    let me = w.me("ANN", T0).expect("ok");
    assert_eq!(
        (me.username.as_str(), me.balance, me.unlimited, me.enabled),
        ("ann", 22, false, true)
    );
    assert_eq!(me.rates, json!({"cpu": 1, "phx": 2.5}));
    assert_eq!(me.rates, rest(&mut w, "GET", "/api/quota/rates")["rates"]);

    let acc = w.accelerators().expect("ok");
    let rest_acc = rest(&mut w, "GET", "/api/accelerators");
    assert_eq!(acc.len(), 1);
    assert_eq!(acc[0].0, "phx");
    assert_eq!(
        rest_acc["accelerators"]["phx"]["displayName"],
        acc[0].1.display_name.as_str()
    );
    assert_eq!(
        acc[0].1.node_selector.get("accel").map(String::as_str),
        Some("phx")
    );
    assert_eq!(acc[0].1.quota_rate, Milli(2500));

    // Stale cleanup.
    let s2 = StartRequest {
        username: "bob".into(),
        resource: None,
        runtime_minutes: 10,
        server_name: String::new(),
        started_at: None,
        groups: None,
        budget: None,
    };
    assert!(matches!(
        w.check_start(&s2, T0).expect("ok"),
        StartDecision::Allowed(_)
    ));
    assert!(w.cleanup_stale(T0.plus_seconds(8 * 3600)).expect("ok").is_empty());
    let cleaned = w.cleanup_stale(T0.plus_seconds(8 * 3600 + 60)).expect("ok");
    assert_eq!(
        cleaned
            .iter()
            .map(|c| (c.username.as_str(), c.duration_minutes))
            .collect::<Vec<_>>(),
        [("bob", 481)]
    );
}

/// `start-request.groups` is one text (a name per line): any order and repeats are one set, stored
/// once; the same groups again change nothing; a bad line is named and nothing is recorded.
#[test]
fn reported_groups_cross_as_one_text() {
    use quota_core::groups::{GroupNames, ReportedGroups};
    let v = json!({"custom": {"authMode": "github", "quota": {"defaultQuota": 1000,
        "groups": {"lab": {"accelerators": ["phx"]}}},
        "accelerators": {"phx": {"quotaRate": 2.5}}}});
    let mut w = Worker::new(
        common::runtime(),
        Box::new(SqliteDb::memory(&common::runtime()).expect("memory db")),
        &v.to_string(),
    )
    .expect("worker");
    let start = |server: &str, groups: Option<&str>| StartRequest {
        username: "ann".into(),
        resource: Some("phx".into()),
        runtime_minutes: 4,
        server_name: server.into(),
        started_at: None,
        groups: groups.map(|g| ReportedGroups::text(g.into())),
        budget: None,
    };
    let memberships = |w: &mut Worker| rest(w, "GET", "/admin/api/quota/memberships")["memberships"].clone();

    let d = w.check_start(&start("a", Some("zz\nlab\nzz")), T0).expect("ok");
    assert!(matches!(d, StartDecision::Allowed(_)), "{d:?}");
    let stored = memberships(&mut w);
    assert_eq!(
        stored,
        json!([{"username": "ann", "groups": ["lab", "zz"], "since": "2026-11-18T11:06:40"}])
    );

    // The same groups, as sorted text, in another order, or checked by the host: nothing written.
    let later = T0.plus_seconds(60);
    for groups in ["lab\nzz", "zz\nlab"] {
        let d = w.check_start(&start("b", Some(groups)), later).expect("ok");
        assert!(matches!(d, StartDecision::Allowed(_)), "{d:?}");
        assert_eq!(memberships(&mut w), stored, "{groups:?}");
    }
    let checked = GroupNames::from_names("groups", ["zz", "lab"]).expect("valid");
    let d = w
        .check_start(
            &StartRequest {
                groups: Some(checked.into()),
                ..start("c", None)
            },
            later,
        )
        .expect("ok");
    assert!(matches!(d, StartDecision::Allowed(_)), "{d:?}");
    assert_eq!(memberships(&mut w), stored);

    // A bad line: named by its place, and nothing recorded (no session, the groups as they were).
    let sessions_before = rest(&mut w, "GET", "/admin/api/quota/sessions");
    for (text, field) in [
        ("lab\n\nzz", "groups[1]"),
        ("lab\nz\u{7}z", "groups[1]"),
        ("\u{1b}lab", "groups[0]"),
    ] {
        match w.check_start(&start("d", Some(text)), later) {
            Err(HostError::Quota(QuotaError::Invalid { field: f, .. })) => assert_eq!(f, field, "{text:?}"),
            other => panic!("{text:?}: {other:?}"),
        }
    }
    assert_eq!(rest(&mut w, "GET", "/admin/api/quota/sessions"), sessions_before);
    assert_eq!(memberships(&mut w), stored);

    // Reported empty: in no group from now on, so the restricted accelerator is forbidden.
    let d = w.check_start(&start("e", Some("")), later).expect("ok");
    assert!(matches!(d, StartDecision::Forbidden(_)), "{d:?}");
    assert_eq!(memberships(&mut w), stored, "a forbidden start records nothing");
    let cpu = StartRequest {
        resource: None,
        ..start("e", Some(""))
    };
    assert!(matches!(
        w.check_start(&cpu, later).expect("ok"),
        StartDecision::Allowed(_)
    ));
    assert_eq!(
        memberships(&mut w),
        json!([{"username": "ann", "groups": [], "since": "2026-11-18T11:07:40"}])
    );
}
