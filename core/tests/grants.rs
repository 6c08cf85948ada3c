//! Dated grants through the admin actions (credit model 2): `add` with `expires_at` makes a grant,
//! the next write after its expiry writes it off dated then, `set` replaces the whole credit, and
//! every refused request changes nothing.

use quota_core::admin::{admin_update, AdminAction, AdminRequest};
use quota_core::engine_call::EngineCall;
use quota_core::store::GrantStore;
use quota_core::store::{AccountKey, TransactionType};
use quota_core::{MemStore, QuotaError, Timestamp};

const T0: Timestamp = Timestamp(1_795_000_000);
const DAY: i64 = 86_400;

fn act(
    store: &mut MemStore,
    action: AdminAction,
    expires_at: Option<Timestamp>,
    now: Timestamp,
) -> Result<i64, QuotaError> {
    let req = AdminRequest {
        username: "ann".into(),
        action,
        description: None,
        expires_at,
    };
    admin_update(&mut EngineCall::new(store), &req, "root", now).map(|r| r.balance)
}

fn ledger(store: &MemStore) -> Vec<(TransactionType, i64, i64)> {
    store
        .transactions
        .iter()
        .map(|t| {
            (
                t.transaction_type,
                t.amount,
                t.created_at.seconds() - T0.seconds(),
            )
        })
        .collect()
}

#[test]
fn an_add_with_expiry_lapses_at_its_time_and_is_written_off_by_the_next_write() {
    let mut s = MemStore::new();
    assert_eq!(act(&mut s, AdminAction::Set(10), None, T0).unwrap(), 10);
    assert_eq!(
        act(&mut s, AdminAction::Add(50), Some(T0.plus_seconds(7 * DAY)), T0).unwrap(),
        60
    );
    let grants = s.account_grants(&AccountKey::User("ann".into())).unwrap();
    assert_eq!((grants.len(), grants[0].amount, grants[0].remaining), (1, 50, 50));
    // A deduct draws from the grant first (it expires before the undated lot, which never does).
    assert_eq!(
        act(&mut s, AdminAction::Deduct(20), None, T0.plus_seconds(DAY)).unwrap(),
        40
    );
    assert_eq!(
        s.account_grants(&AccountKey::User("ann".into())).unwrap()[0].remaining,
        30
    );
    // Eight days in, the next write first writes the grant off, dated at its expiry.
    assert_eq!(
        act(&mut s, AdminAction::Add(1), None, T0.plus_seconds(8 * DAY)).unwrap(),
        11
    );
    assert_eq!(
        ledger(&s),
        vec![
            (TransactionType::Set, 10, 0),
            (TransactionType::Add, 50, 0),
            (TransactionType::Deduct, -20, DAY),
            (TransactionType::Expire, -30, 7 * DAY),
            (TransactionType::Add, 1, 8 * DAY),
        ]
    );
    assert!(s
        .account_grants(&AccountKey::User("ann".into()))
        .unwrap()
        .is_empty());
}

#[test]
fn a_set_replaces_every_grant_and_a_dated_set_is_one_grant() {
    let mut s = MemStore::new();
    act(&mut s, AdminAction::Add(30), Some(T0.plus_seconds(DAY)), T0).unwrap();
    act(&mut s, AdminAction::Add(5), None, T0).unwrap();
    assert_eq!(
        act(&mut s, AdminAction::Set(100), Some(T0.plus_seconds(2 * DAY)), T0).unwrap(),
        100
    );
    let grants = s.account_grants(&AccountKey::User("ann".into())).unwrap();
    assert_eq!(grants.len(), 1, "the old grant holds nothing any more");
    assert_eq!(
        (grants[0].amount, grants[0].expires_at),
        (100, T0.plus_seconds(2 * DAY))
    );
    // Past the new grant's expiry everything lapses: the undated lot was 0 after the set.
    assert_eq!(
        act(&mut s, AdminAction::Add(0), None, T0.plus_seconds(3 * DAY)).unwrap(),
        0
    );
    assert_eq!(
        s.transactions
            .iter()
            .filter(|t| t.transaction_type == TransactionType::Expire)
            .count(),
        1
    );
}

#[test]
fn bad_expiries_are_refused_naming_the_field_and_change_nothing() {
    let mut s = MemStore::new();
    act(&mut s, AdminAction::Set(10), None, T0).unwrap();
    let before = s.clone();
    for (action, at, field) in [
        (AdminAction::Add(5), T0, "expires_at"),
        (AdminAction::Add(5), T0.plus_seconds(-1), "expires_at"),
        (AdminAction::Add(5), T0.plus_seconds(3661 * DAY), "expires_at"),
        (AdminAction::Add(0), T0.plus_seconds(DAY), "amount"),
        (AdminAction::Add(-5), T0.plus_seconds(DAY), "amount"),
        (AdminAction::Deduct(5), T0.plus_seconds(DAY), "expires_at"),
        (
            AdminAction::SetUnlimited(true),
            T0.plus_seconds(DAY),
            "expires_at",
        ),
    ] {
        match act(&mut s, action, Some(at), T0) {
            Err(QuotaError::Invalid { field: f, .. }) => assert_eq!(f, field, "{action:?} {at:?}"),
            other => panic!("{action:?} {at:?}: {other:?}"),
        }
        assert_eq!(s, before, "{action:?} changed the store");
    }
    assert!(act(&mut s, AdminAction::Add(5), Some(T0.plus_seconds(3660 * DAY)), T0).is_ok());
}

#[test]
fn a_deduct_refused_on_the_balance_as_of_now_writes_no_expiry_either() {
    let mut s = MemStore::new();
    act(&mut s, AdminAction::Add(50), Some(T0.plus_seconds(DAY)), T0).unwrap();
    let before = s.clone();
    // The stored balance is 50, but the grant has lapsed: as of now there is nothing to deduct.
    let later = T0.plus_seconds(2 * DAY);
    assert_eq!(
        act(&mut s, AdminAction::Deduct(10), None, later),
        Err(QuotaError::InsufficientBalance)
    );
    assert_eq!(s, before, "the refusal wrote nothing, not even the expiry");
    assert_eq!(act(&mut s, AdminAction::Add(0), None, later).unwrap(), 0);
}

#[test]
fn the_gate_and_the_charge_see_the_balance_as_of_now() {
    use quota_core::gate::{check_start, StartDecision, StartRequest};
    use quota_core::sessions::{end_session, EndRequest, EndTarget, Outcome};
    let cfg: quota_core::Config =
        serde_json::from_value(serde_json::json!({"custom": {"authMode": "github"}})).expect("config");
    let mut s = MemStore::new();
    act(&mut s, AdminAction::Set(5), None, T0).unwrap();
    act(&mut s, AdminAction::Add(100), Some(T0.plus_seconds(DAY)), T0).unwrap();
    let req = StartRequest {
        username: "ann".into(),
        resource: None,
        runtime_minutes: 60,
        server_name: String::new(),
        started_at: None,
        groups: None,
        budget: None,
    };
    // Within the grant's time 105 credits cover an hour at 1/min; a running server holds 60.
    let t1 = T0.plus_seconds(3600);
    let StartDecision::Allowed(started) = check_start(&cfg, &mut EngineCall::new(&mut s), &req, t1).unwrap()
    else {
        panic!("allowed within the grant's time")
    };
    assert_eq!(started.balance, 105);
    // Ended after 30 minutes: the charge draws from the grant, the undated 5 stay.
    let end = EndRequest {
        target: EndTarget::Id(started.session_id),
        outcome: Outcome::Completed,
        ended_at: None,
    };
    end_session(&mut EngineCall::new(&mut s), &end, t1.plus_seconds(1800)).unwrap();
    let grants = s.account_grants(&AccountKey::User("ann".into())).unwrap();
    assert_eq!(grants[0].remaining, 70);
    // Past the expiry the gate counts only the undated 5: refused, and nothing written by it.
    let before = s.clone();
    let t2 = T0.plus_seconds(2 * DAY);
    match check_start(&cfg, &mut EngineCall::new(&mut s), &req, t2).unwrap() {
        StartDecision::Refused(r) => {
            assert_eq!(r.balance, 5);
            assert!(r.message.contains("Current balance: 5,"), "{}", r.message);
        }
        other => panic!("refused after the expiry, got {other:?}"),
    }
    assert_eq!(
        s.transactions, before.transactions,
        "a refused start writes no transaction"
    );
}

#[test]
fn the_sweep_writes_off_every_due_grant_once() {
    let mut s = MemStore::new();
    for (name, amount, days) in [("ann", 10, 1), ("bob", 20, 1), ("bob", 5, 3), ("cat", 7, 9)] {
        let req = AdminRequest {
            username: name.into(),
            action: AdminAction::Add(amount),
            description: None,
            expires_at: Some(T0.plus_seconds(days * DAY)),
        };
        admin_update(&mut EngineCall::new(&mut s), &req, "root", T0).unwrap();
    }
    let now = T0.plus_seconds(4 * DAY);
    let swept = quota_core::grants::sweep(&mut EngineCall::new(&mut s), now, None).unwrap();
    assert_eq!((swept.grants_expired, swept.credits_expired), (3, 35));
    assert_eq!(
        quota_core::grants::sweep(&mut EngineCall::new(&mut s), now, None).unwrap(),
        Default::default(),
        "again: nothing"
    );
    let balances: Vec<(String, i64)> = s
        .users
        .values()
        .map(|u| (u.username.clone(), u.balance))
        .collect();
    assert_eq!(
        balances,
        vec![("ann".into(), 0), ("bob".into(), 0), ("cat".into(), 7)]
    );
    for u in s.users.values() {
        let sum: i64 = s
            .transactions
            .iter()
            .filter(|t| t.username == u.username)
            .map(|t| t.amount)
            .sum();
        assert_eq!(
            sum, u.balance,
            "{}: stored = as of now = the ledger's sum after a sweep",
            u.username
        );
    }
}

#[test]
fn a_sweep_in_chunks_writes_what_one_call_writes_and_says_when_it_is_done() {
    let make = || {
        let mut s = MemStore::new();
        for i in 0..5 {
            let req = AdminRequest {
                username: format!("u{i}"),
                action: AdminAction::Add(10 + i),
                description: None,
                expires_at: Some(T0.plus_seconds(DAY)),
            };
            admin_update(&mut EngineCall::new(&mut s), &req, "root", T0).unwrap();
        }
        s
    };
    let now = T0.plus_seconds(2 * DAY);
    let mut whole = make();
    let all = quota_core::grants::sweep(&mut EngineCall::new(&mut whole), now, None).unwrap();
    let mut chunked = make();
    let (mut grants, mut credits, mut calls) = (0, 0, 0);
    loop {
        let step = quota_core::grants::sweep(&mut EngineCall::new(&mut chunked), now, Some(2)).unwrap();
        calls += 1;
        grants += step.grants_expired;
        credits += step.credits_expired;
        if step.more != Some(true) {
            break;
        }
    }
    assert_eq!((grants, credits), (all.grants_expired, all.credits_expired));
    assert_eq!(calls, 3, "5 accounts, 2 a call");
    assert_eq!(
        chunked.transactions, whole.transactions,
        "the same rows, in the same order"
    );
}
