//! Rules that need a seeded store (balances near the exact-integer bound) or the typed API.

use quota_core::admin::{admin_update, AdminAction, AdminRequest};
use quota_core::engine_call::EngineCall;
use quota_core::gate::{check_start, StartDecision, StartRequest};
use quota_core::limits::BALANCE_ABS_MAX;
use quota_core::refresh::{refresh, RefreshAction, RefreshParams, RefreshRequest};
use quota_core::sessions::{end_session, EndRequest, EndTarget, Outcome};
use quota_core::store::UserRecord;
use quota_core::store::UserStore;
use quota_core::targets::Targets;
use quota_core::{Config, MemStore, QuotaError, Timestamp};

const T0: Timestamp = Timestamp(1_795_000_000);

fn config() -> Config {
    serde_json::from_value(serde_json::json!({"custom": {"authMode": "github",
        "accelerators": {"phx": {"quotaRate": 2}, "dgpu": {"quotaRate": 4}}}}))
    .expect("fixture config deserializes through serde")
}

fn store_with(name: &str, balance: i64) -> MemStore {
    let mut s = MemStore::new();
    s.put_user(&UserRecord {
        username: name.into(),
        balance,
        unlimited: false,
        updated_at: T0,
    })
    .unwrap();
    s
}

#[test]
fn admin_add_past_the_exact_range_is_refused_and_changes_nothing() {
    let mut store = store_with("alice", BALANCE_ABS_MAX - 5);
    let before = store.clone();
    let req = AdminRequest {
        username: "alice".into(),
        action: AdminAction::Add(6),
        description: None,
        expires_at: None,
    };
    let err = admin_update(&mut EngineCall::new(&mut store), &req, "root", T0).unwrap_err();
    assert!(matches!(err, QuotaError::OutOfRange(_)), "{err:?}");
    assert_eq!(err.status(), 400);
    assert_eq!(store, before);
    let req = AdminRequest {
        username: "alice".into(),
        action: AdminAction::Add(5),
        description: None,
        expires_at: None,
    };
    assert_eq!(
        admin_update(&mut EngineCall::new(&mut store), &req, "root", T0)
            .unwrap()
            .balance,
        BALANCE_ABS_MAX
    );
}

#[test]
fn refresh_that_would_overflow_for_one_user_changes_nobody() {
    let mut store = store_with("zed", BALANCE_ABS_MAX - 1);
    store
        .put_user(&UserRecord {
            username: "amy".into(),
            balance: 0,
            unlimited: false,
            updated_at: T0,
        })
        .unwrap();
    let before = store.clone();
    let params = RefreshParams {
        rule_name: "r".into(),
        action: RefreshAction::Add,
        amount: 10,
        max_balance: None,
        min_balance: None,
        targets: Targets::default(),
        expires_after: None,
    };
    let err = refresh(
        &quota_core::Config::default(),
        &mut EngineCall::new(&mut store),
        &RefreshRequest {
            params,
            run_id: None,
            dry_run: false,
        },
        T0,
    )
    .unwrap_err();
    assert!(matches!(err, QuotaError::OutOfRange(_)), "{err:?}");
    assert_eq!(store, before, "amy, scanned first, must not have been topped up");
}

#[test]
fn usage_charge_past_the_exact_range_is_refused_and_the_session_stays_active() {
    let mut store = store_with("alice", 1000);
    let cfg = config();
    let req = StartRequest {
        username: "alice".into(),
        resource: Some("dgpu".into()),
        runtime_minutes: 5,
        server_name: String::new(),
        started_at: None,
        groups: None,
        budget: None,
    };
    let StartDecision::Allowed(s) = check_start(&cfg, &mut EngineCall::new(&mut store), &req, T0).unwrap()
    else {
        panic!("allowed")
    };
    // Drive the balance to the bottom of the range, then end: the charge would cross it.
    let mut u = store.get_user("alice").unwrap().unwrap();
    u.balance = -BALANCE_ABS_MAX + 1;
    store.put_user(&u).unwrap();
    let before = store.clone();
    let end = EndRequest {
        target: EndTarget::Id(s.session_id),
        ended_at: None,
        outcome: Outcome::Completed,
    };
    let err = end_session(&mut EngineCall::new(&mut store), &end, T0.plus_seconds(600)).unwrap_err();
    assert!(matches!(err, QuotaError::OutOfRange(_)), "{err:?}");
    assert_eq!(store, before);
}

#[test]
fn deduct_more_than_the_balance_is_insufficient_balance() {
    let mut store = store_with("alice", 5);
    let before = store.clone();
    let req = AdminRequest {
        username: "alice".into(),
        action: AdminAction::Deduct(6),
        description: None,
        expires_at: None,
    };
    assert_eq!(
        admin_update(&mut EngineCall::new(&mut store), &req, "root", T0).unwrap_err(),
        QuotaError::InsufficientBalance
    );
    assert_eq!(store, before);
}

#[test]
fn refusal_message_is_byte_exact() {
    let mut store = store_with("bob", 19);
    let req = StartRequest {
        username: "bob".into(),
        resource: Some("dgpu".into()),
        runtime_minutes: 5,
        server_name: String::new(),
        started_at: None,
        groups: None,
        budget: None,
    };
    let StartDecision::Refused(r) =
        check_start(&config(), &mut EngineCall::new(&mut store), &req, T0).unwrap()
    else {
        panic!("refused")
    };
    assert_eq!(
        r.message,
        "Cannot start container: Insufficient quota. Current balance: 19, estimated cost: 20 (4 quota/min x 5 min). Please contact administrator to add quota."
    );
    assert!(store.sessions.is_empty());
}

#[test]
fn bodies_over_one_mebibyte_are_413_and_change_nothing() {
    use quota_core::{handle_request, Caller, Request};
    let cfg = config();
    let mut store = MemStore::new();
    let admin = Caller {
        name: "admin".into(),
        admin: true,
        scopes: vec![],
    };
    let pad = " ".repeat(quota_core::api::BODY_BYTES_MAX);
    let body = format!(r#"{{"action": "set", "amount": 5}}{pad}"#);
    let req = Request {
        method: "POST",
        path: "/admin/api/quota/users/alice",
        query: "",
        body: &body,
        caller: Some(&admin),
    };
    let r = handle_request(&cfg, &mut store, &req, T0).unwrap().answer;
    assert_eq!(r.status, 413, "{}", r.body);
    assert!(r.body.starts_with(r#"{"error":"body: larger than"#), "{}", r.body);
    assert_eq!(store, MemStore::new());
    // Exactly at the limit is accepted (JSON allows trailing whitespace).
    let json = r#"{"action": "set", "amount": 5}"#;
    let body = format!("{json}{}", &pad[json.len()..]);
    assert_eq!(body.len(), quota_core::api::BODY_BYTES_MAX);
    let req = Request { body: &body, ..req };
    assert_eq!(
        handle_request(&cfg, &mut store, &req, T0).unwrap().answer.status,
        200
    );
}
